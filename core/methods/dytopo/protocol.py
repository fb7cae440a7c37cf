"""DyTopo (arXiv 2602.06039): each round the Manager sets a goal, workers state a query and a key, MiniLM
embeds them and a sparse directed graph decides who hears whom. Also hosts the papers' graph baselines
(random, broadcast, chain, star, single-turn), which run the same rounds over another graph.

Two protocols:

* phased (reference, default): round 1 broadcast; rounds >= 2 run A) descriptors in parallel,
  B) routing, C) work in topological tiers, each agent receiving its in-neighbours' messages of this
  round; then the Manager.
* single-pass (paper, Algorithm 1): one call per worker per round gives work and descriptors together;
  routing after the barrier; routed messages enter the recipients' memory for the next round, strongest
  first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)
from core.methods.dytopo.calls import DyTopoCalls
from core.methods.dytopo.fidelity import DEVIATIONS as FIDELITY
from core.methods.dytopo.history import HistoryReplay
from core.methods.dytopo.rebuild import ConversationRebuild
from core.methods.dytopo.steer import DyTopoSteering, join_inbox
from core.methods.registry import MethodInfo, MethodOptions, call_options, call_tables, choice, register, with_calls
from core.routing.dytopo import RoutingResult, similarity_matrix
from core.routing.wiring import DyTopoWiring, WiringRule
from core.runtime import events as ev
from core.runtime.config import RoundProtocol
from core.runtime.context import shrink_pieces
from core.runtime.control import StepBoundary
from core.runtime.convergence import text_similarity
from core.runtime.engine import AgentResult, Evaluation
from core.runtime.events import CallStatus
from core.runtime.memory import MEMORY_ACCUMULATE, MEMORY_RULES, MemoryItem
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.prompts import PROMPT_CONVERSATION, PROMPT_ORDERS
from core.runtime.rosters import Team
from core.runtime.run_context import begin_round, finish_round, notice, start_phase
from core.runtime.steering import GRAPH_ACTIONS, ROUND_ACTIONS

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext


# What travels along an edge (method option "payload"):
PAYLOAD_PRIVATE = "private"  # the paper (§3.1, eq. 3): only the private message; public goes to the Manager
PAYLOAD_BOTH = "private+public"  # the reference deployment: the private note, then the public work
PAYLOAD_AUTO = "auto"  # private for the single-pass (paper) protocol, private+public for phased
PAYLOADS = (PAYLOAD_AUTO, PAYLOAD_PRIVATE, PAYLOAD_BOTH)


def message_for(sender: AgentResult, recipient: str, payload: str = PAYLOAD_BOTH) -> str:
    """What flows along an edge. The sender's private message for this recipient (or for "all") comes
    first; with PAYLOAD_BOTH its public work follows. With PAYLOAD_PRIVATE only the private message
    travels, and a sender that wrote none sends its public work instead, so an edge is never empty.
    Notes are matched to the recipient's role name without regard to case."""
    notes = {k.strip().lower(): v for k, v in sender.private.items() if isinstance(v, str) and v.strip()}
    note = notes.get(recipient.lower()) or notes.get("all") or notes.get("*")
    if note and payload == PAYLOAD_PRIVATE:
        return note.strip()
    if note:
        return f"Note for you: {note}\n\n{sender.public}".strip()
    return sender.public


# Shared by DyTopo and the baselines that run its rounds (core.methods.baselines.method).
def memory_option() -> Any:
    return choice(
        MEMORY_ACCUMULATE, MEMORY_RULES,
        "what a worker's prompt shows of its memory: accumulate (eq. 3: every earlier output and message) or "
        "latest (only the newest message per teammate: fewer tokens, not the paper)",
    )


# Shared by DyTopo and its baselines: the order of a worker prompt's parts (core.runtime.prompts).
def prompt_order_option() -> Any:
    return choice(
        PROMPT_CONVERSATION, PROMPT_ORDERS,
        "conversation: each agent's requests form one growing chat that begins with the team's shared preamble "
        "(problem, team, rules), then the role; each call appends what is new and the reply, so a server's prefix "
        "cache prefills each token once and a global cache the problem once per team (memory=latest keeps the "
        "cache layout); cache: each prompt rebuilt with what persists first (role, problem, memory), then the "
        "round's goal, inbox and reply shape; paper: the reference's order (\"You are ...\" first, reply shape in "
        "the system prompt, goal before memory)",
    )


DESCRIPTOR_CONTEXTS = ("round", "full")

# Each call kind's own max_tokens and temperature, for DyTopo and the baselines that run its rounds.
CALL_OPTIONS = (
    call_options("manager", "the Manager's calls", "manager_call"),
    call_options("worker", "the workers' work calls", "work_call"),
    call_options("descriptor", "the workers' descriptor calls", "descriptor_call"),
)


class _DyTopoOptions(MethodOptions):
    """DyTopo's options (arXiv 2602.06039; the reference deployment's choices beside the paper's)."""

    payload: str = choice(
        PAYLOAD_AUTO, PAYLOADS,
        "what travels along an edge: private (the paper), private+public (the reference), auto "
        "(private in single-pass, private+public in phased)",
    )
    memory: str = memory_option()
    prompt_order: str = prompt_order_option()
    descriptor_context: str = choice(
        "full", DESCRIPTOR_CONTEXTS,
        "what a phased descriptor call sees: full (the agent's whole state, as eq. 1: the whole problem and memory, "
        "which the work call that follows reuses from a server's prefix cache) or round (the problem's opening and "
        "the last round's memory: fewer prompt tokens, more of them prefilled on a caching server, not the paper)",
    )


DyTopoOptions = with_calls(_DyTopoOptions, CALL_OPTIONS)


class DyTopoMethod:
    """The DyTopo round loop over a wiring rule (DyTopo's own routing, or a baseline's fixed graph)."""

    call_tables = call_tables(CALL_OPTIONS)  # each call kind's settings table, for the engine's call_limits

    def __init__(
        self,
        graph: WiringRule | None = None,
        *,
        name: str | None = None,
        round_limit: int | None = None,
        payload: str = PAYLOAD_AUTO,
        memory: str = MEMORY_ACCUMULATE,
        prompt_order: str = PROMPT_CONVERSATION,
        descriptor_context: str = "full",
    ) -> None:
        self.graph: WiringRule = graph or DyTopoWiring()
        self.name = name or self.graph.name
        self.round_limit = round_limit  # single-turn: one round whatever max_rounds says
        self.payload_option = payload
        self.memory_rule = memory  # core.runtime.memory: accumulate (eq. 3) or latest
        self.prompt_order = prompt_order  # core.runtime.prompts PROMPT_ORDERS: conversation, cache or paper
        self.descriptor_context = descriptor_context  # DESCRIPTOR_CONTEXTS
        self.payload = PAYLOAD_BOTH
        self._similarity: np.ndarray | None = None  # current round's, for re-routing
        self._descriptor_vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # embedded on arrival
        self._embeddings: tuple[list[list[float]], list[list[float]]] | None = None
        self._routing: RoutingResult | None = None
        self._can_reroute = False
        self._previous_public: dict[str, str] = {}

    def roster(self, team: Team) -> tuple[str, list[str], dict[str, str]]:
        roles = {r.name: r.description for r in (team.manager, *team.workers)}
        return team.manager.name, list(team.worker_names), roles

    @property
    def _max_rounds(self) -> int:
        limit = self.ctx.state.params.max_rounds
        return min(limit, self.round_limit) if self.round_limit else limit

    async def run(self, ctx: RunContext) -> RunOutcome:
        self.ctx = ctx
        single_pass = ctx.spec.settings.protocol == RoundProtocol.SINGLE_PASS
        self.payload = self.payload_option
        if self.payload == PAYLOAD_AUTO:
            self.payload = PAYLOAD_PRIVATE if single_pass else PAYLOAD_BOTH
        self.calls = DyTopoCalls(ctx, private_only=self.payload == PAYLOAD_PRIVATE, memory_rule=self.memory_rule,
                                 prompt_order=self.prompt_order,
                                 full_descriptors=self.descriptor_context == "full")
        self.steer = DyTopoSteering(ctx, self.name, acyclic=self._breaks_cycles, reroute=self._steer_reroute,
                                    memory=self.calls.memory)
        ctx.attach(reroute=self._reroute_now, steer=self.steer.apply)
        start_round, goal = 0, ""
        if ctx.spec.fork is not None:
            self._replay_history(ctx.spec.fork.history)
            start_round, goal = ctx.spec.fork.round, ctx.spec.fork.goal
        return await self._run_rounds(start_round, goal)

    async def _run_rounds(self, round_no: int, goal: str) -> RunOutcome:
        """Run rounds after round_no (0 for a fresh run, the fork round for a fork)."""
        while True:
            round_no += 1
            await self.ctx.checkpoint(StepBoundary.ROUND)
            if round_no > self._max_rounds:
                # A fork from the last allowed round, or max_rounds lowered while waiting to start this one.
                answer, source = self.ctx.state.answer
                return RunOutcome(EndReason.MAX_ROUNDS, f"reached max_rounds ({round_no - 1})", answer, source)
            self._can_reroute = False
            begin_round(self.ctx, round_no)
            if round_no == 1:
                goal = await self._plan()
                await self.ctx.checkpoint(StepBoundary.PHASE)
            goal = self.steer.round_goal(round_no, goal)  # a goal the user gave replaces the Manager's
            if self.ctx.spec.settings.protocol == RoundProtocol.SINGLE_PASS:
                # The paper routes from round 1 (Algorithm 1): descriptors come with the first replies.
                outputs = await self._single_pass_round(goal)
            elif round_no == 1:
                # The reference's phased protocol: round 1 is a broadcast, routing starts in round 2.
                outputs = await self._broadcast_round(goal)
            else:
                outputs = await self._phased_round(goal)
            await self.ctx.checkpoint(StepBoundary.PHASE)
            outputs = await self.steer.redo_outputs(outputs, self._work_call)
            evaluation = await self.ctx.evaluate(round_no, outputs)
            if evaluation is not None:
                self.calls.remember_feedback(round_no, evaluation.feedback)
            decision = await self._decide(round_no, goal, outputs, evaluation)
            convergence = self._convergence(outputs)
            finish_round(self.ctx, convergence)
            if decision is not None and decision.terminate:
                why = decision.reasoning or "the Manager ended the run"
                if decision.final_answer:
                    return RunOutcome(EndReason.MANAGER, why, decision.final_answer, "manager")
                answer, source = self.ctx.state.answer
                return RunOutcome(EndReason.MANAGER, why, answer, source)
            if round_no >= self._max_rounds and not self._one_more(round_no):
                answer = decision.final_answer if decision is not None else ""
                if answer:
                    return RunOutcome(EndReason.MAX_ROUNDS, f"reached max_rounds ({round_no})", answer, "manager")
                answer, source = self.ctx.state.answer
                return RunOutcome(EndReason.MAX_ROUNDS, f"reached max_rounds ({round_no})", answer, source)
            threshold = self.ctx.spec.settings.convergence_threshold  # None: "off", as in the paper (§3.5.2)
            if (convergence is not None and threshold is not None and convergence >= threshold
                    and not self.steer.veto(round_no)):
                answer, source = self.ctx.state.answer
                return RunOutcome(
                    EndReason.CONVERGED,
                    f"outputs stopped changing (similarity {convergence:.2f} ≥ {threshold:.2f})",
                    answer,
                    source,
                )
            if decision is not None and decision.goal:
                goal = decision.goal

    @property
    def _work_call(self) -> str:
        single_pass = self.ctx.spec.settings.protocol == RoundProtocol.SINGLE_PASS
        return ev.CallKind.SINGLE_PASS if single_pass else ev.CallKind.WORK

    def _one_more(self, round_no: int) -> bool:
        """A user's continue at the last round: max_rounds grows by one (within its bounds)."""
        if not self.steer.veto(round_no):
            return False
        if round_no >= self._max_rounds:
            self.ctx.record(replace(self.ctx.state.params, max_rounds=round_no + 1))
        if round_no >= self._max_rounds:
            notice(self.ctx, f"no round after round {round_no}: it is the most this run may have", "warning")
            return False
        return True

    def _steer_reroute(self) -> bool:
        """A pin, cut or silence taken between routing and work rebuilds this round's graph at once."""
        if not self._can_reroute or self._similarity is None:
            return False
        self._build_graph(rerouted=True)
        return True

    def _replay_history(self, history: list[ev.Event]) -> None:
        """A fork: re-emit the parent's rounds and rebuild memory (and the conversations) as the live run did."""
        memory = HistoryReplay(self.ctx, self.calls, self.steer)
        rebuild = ConversationRebuild(self.calls, self._max_rounds, _render_inbox, self.ctx.spec.team.manager.name)
        for event in history:
            self.ctx.record(event)  # announced again as it was; its RoundFinished restores round and tokens
            rebuild.see(event)
            memory.read(event)
        self._routing = memory.routing or self._routing
        if memory.previous_public is not None:
            self._previous_public = memory.previous_public

    async def _plan(self) -> str:
        start_phase(self.ctx, ev.Phase.PLAN, "Manager sets the first goal")
        decision, status = await self.calls.manager_call(ev.CallKind.PLAN, self.calls.plan_messages(self._max_rounds))
        goal = decision.goal if decision is not None and decision.goal else ""
        if not goal:
            goal = "Work on the problem from your role's perspective and produce a first complete attempt."
        self.ctx.emit(
            ev.ManagerDecided(
                round=self.ctx.state.round,
                terminate=False,
                next_goal=goal,
                reasoning=decision.reasoning if decision is not None else "",
                status=status,
                plan=True,
            )
        )
        return goal

    async def _broadcast_round(self, goal: str) -> dict[str, AgentResult]:
        """Round 1: every worker works on the first goal; every output goes to every worker."""
        single_pass = self.ctx.spec.settings.protocol == RoundProtocol.SINGLE_PASS
        call = ev.CallKind.SINGLE_PASS if single_pass else ev.CallKind.WORK
        start_phase(self.ctx, ev.Phase.WORK, "all workers, broadcast")
        active = self.steer.active(self.ctx.spec.workers)
        results = await self.ctx.gather({name: self._worker(name, call, goal, tier=0) for name in active})
        deliveries: list[dict[str, Any]] = [
            {"src": src, "dst": dst, "score": None, "content": message_for(results[src], dst, self.payload)}
            for dst in active
            for src in active
            if src != dst and results[src].public
        ]
        self.ctx.emit(ev.MessagesRouted(round=self.ctx.state.round, deliveries=deliveries, broadcast=True))
        for name in active:
            self.calls.remember(name, MemoryItem(self.ctx.state.round, "own", name, results[name].public))
        for d in deliveries:
            self.calls.remember(d["dst"], MemoryItem(self.ctx.state.round, "broadcast", d["src"], d["content"]))
        return results

    async def _phased_round(self, goal: str) -> dict[str, AgentResult]:
        """Rounds >= 2 of the reference's phased protocol: A) descriptors, B) routing, C) work in tiers."""
        start_phase(self.ctx, ev.Phase.DESCRIPTORS, "phase A: every worker states its need and offer")
        active = self.steer.active(self.ctx.spec.workers)
        descriptors = await self.ctx.gather(
            {name: self._described_call(name, ev.CallKind.DESCRIPTORS, goal) for name in active}
        )
        self.ctx.emit(
            ev.DescriptorsReady(
                round=self.ctx.state.round,
                descriptors={n: {"query": d.query, "key": d.key} for n, d in descriptors.items()},
            )
        )
        await self.ctx.checkpoint(StepBoundary.PHASE)
        self._route()
        self._can_reroute = True
        await self.ctx.checkpoint(StepBoundary.PHASE)
        self._can_reroute = False
        routing = self._routing
        assert routing is not None
        start_phase(self.ctx, ev.Phase.WORK, f"phase C: {len(routing.tiers)} tiers")
        results: dict[str, AgentResult] = {}
        received: dict[str, list[dict[str, Any]]] = {name: [] for name in self.ctx.spec.workers}
        for tier_index, whole_tier in enumerate(routing.tiers):
            # Silenced agents (routing.inactive) have no call; the graph was rebuilt if one was silenced late.
            tier = [name for name in whole_tier if name not in routing.inactive and name in descriptors]
            deliveries = self._deliveries(routing, tier, results)
            if deliveries:
                self.ctx.emit(ev.MessagesRouted(round=self.ctx.state.round, deliveries=deliveries))
            for d in deliveries:
                received[d["dst"]].append(d)
            # A work reply may carry fresh descriptors; the phase-A ones stay the round's record.
            results.update(await self.ctx.gather({
                name: self._worker(name, ev.CallKind.WORK, goal, inbox=_render_inbox(received[name]), tier=tier_index,
                                   inbox_from=frozenset(d["src"] for d in received[name]))
                for name in tier
            }))
        self._remember_phased(routing, results, received)
        return results

    def _deliveries(self, routing: RoutingResult, tier: list[str], results: dict[str, AgentResult]
                    ) -> list[dict[str, Any]]:
        """What this tier receives along its in-edges from the workers that already ran (paper §3.4)."""
        return [
            {"src": edge.src, "dst": dst, "score": edge.score,
             "content": message_for(results[edge.src], dst, self.payload)}
            for dst in tier for edge in routing.in_edges(dst)
            if edge.src in results and results[edge.src].public
        ]

    def _remember_phased(self, routing: RoutingResult, results: dict[str, AgentResult],
                         received: dict[str, list[dict[str, Any]]]) -> None:
        """A phased round's memory: each worker's output and what it received; edges whose provider did not run
        in an earlier tier (a wiring rule that keeps cycles, e.g. broadcast) deliver at the barrier, into next
        round's memory, as in the single-pass protocol."""
        delivered = {(d["src"], d["dst"]) for deliveries in received.values() for d in deliveries}
        late: list[dict[str, Any]] = [
            {"src": e.src, "dst": e.dst, "score": e.score, "content": message_for(results[e.src], e.dst, self.payload)}
            for e in routing.edges
            if (e.src, e.dst) not in delivered and e.src in results and results[e.src].public
        ]
        round_no = self.ctx.state.round
        if late:
            self.ctx.emit(ev.MessagesRouted(round=round_no, deliveries=late))
        for name in results:
            self.calls.remember(name, MemoryItem(round_no, "own", name, results[name].public))
            for d in received[name]:
                self.calls.remember(name, MemoryItem(round_no, "routed", d["src"], d["content"], d["score"]))
        for d in sorted(late, key=lambda d: (d["dst"], -d["score"], d["src"])):
            self.calls.remember(d["dst"], MemoryItem(round_no, "routed", d["src"], d["content"], d["score"]))

    async def _single_pass_round(self, goal: str) -> dict[str, AgentResult]:
        start_phase(self.ctx, ev.Phase.WORK, "single pass: work and descriptors together")
        results = await self.ctx.gather(
            {name: self._described_call(name, ev.CallKind.SINGLE_PASS, goal)
             for name in self.steer.active(self.ctx.spec.workers)}
        )
        self.ctx.emit(
            ev.DescriptorsReady(
                round=self.ctx.state.round,
                descriptors={n: {"query": r.query, "key": r.key} for n, r in results.items()},
            )
        )
        await self.ctx.checkpoint(StepBoundary.PHASE)
        results = await self.steer.redo_outputs(results, ev.CallKind.SINGLE_PASS)  # retried before it is routed
        self._route()
        routing = self._routing
        assert routing is not None
        # Barrier semantics (paper eq. 3): messages enter next round's memory, strongest first.
        deliveries: list[dict[str, Any]] = []
        for dst in routing.order:
            for edge in routing.in_edges(dst):
                if edge.src not in results or not results[edge.src].public:  # a copied template sends nothing
                    continue
                deliveries.append(
                    {
                        "src": edge.src,
                        "dst": dst,
                        "score": edge.score,
                        "content": message_for(results[edge.src], dst, self.payload),
                    }
                )
        self.ctx.emit(ev.MessagesRouted(round=self.ctx.state.round, deliveries=deliveries))
        for name in results:
            self.calls.remember(name, MemoryItem(self.ctx.state.round, "own", name, results[name].public))
        round_no = self.ctx.state.round
        for d in deliveries:
            self.calls.remember(d["dst"], MemoryItem(round_no, "routed", d["src"], d["content"], d["score"]))
        return results

    async def _described_call(self, name: str, call: str, goal: str) -> AgentResult:
        """A call whose reply carries descriptors. They are embedded as soon as the reply is in, while
        the other agents are still answering, so routing after the barrier has no model work left."""
        result = await self._worker(name, call, goal)
        if not (result.query or result.key):  # a copied reply template states nothing: no similarity, no edges
            return result
        vectors = await self.ctx.embed([result.query, result.key])
        self._descriptor_vectors[name] = (vectors[0], vectors[1])
        return result

    async def _worker(
        self, name: str, call: str, goal: str, *, inbox: str = "", tier: int | None = None,
        inbox_from: frozenset[str] = frozenset(),
    ) -> AgentResult:
        """A worker's call, with the user's notes first in its inbox (core.methods.dytopo.steer)."""
        return await self.steer.call(name, lambda notes: self.calls.worker_call(
            name, call, goal, inbox=join_inbox(notes, inbox), tier=tier, inbox_from=inbox_from))

    def _route(self) -> None:
        """Phase B, from the descriptors _described_call embedded as each reply arrived."""
        start_phase(self.ctx, ev.Phase.ROUTING, "phase B: build the graph from the embedded descriptors")
        # A silenced agent, or one that copied the reply template, stated nothing: zero vectors (no similarity).
        if not self._descriptor_vectors:
            notice(self.ctx, "no agent stated its own needs and offers this round: nothing is routed", "warning")
        stated = list(self._descriptor_vectors.values())
        # Nobody stated anything: every vector is a zero one, so their length is anybody's (no similarity).
        blank = np.zeros_like(stated[0][0]) if stated else np.zeros(1, dtype=np.float32)
        vectors = [self._descriptor_vectors.get(name, (blank, blank)) for name in self.ctx.spec.workers]
        q = np.asarray([v[0] for v in vectors])
        k = np.asarray([v[1] for v in vectors])
        self._descriptor_vectors = {}
        self._similarity = similarity_matrix(q, k)
        self._embeddings = (q.tolist(), k.tolist())
        self._build_graph(rerouted=False)

    def _build_graph(self, *, rerouted: bool) -> None:
        assert self._similarity is not None and self._embeddings is not None
        params = self.ctx.state.params
        pinned, cut, silenced = self.steer.graph_sets(self.ctx.state.round)
        if isinstance(self.graph, DyTopoWiring):
            routing = self.graph.build(self.ctx.state.round, list(self.ctx.spec.workers), self._similarity, params.tau,
                                       params.k_in, break_cycles=self._breaks_cycles, pinned=pinned, cut=cut,
                                       silenced=silenced)
        else:  # a baseline's own graph: no pins or cuts, but a silenced agent has no edges there either
            routing = self.steer.without_silenced(self.graph.build(
                self.ctx.state.round, list(self.ctx.spec.workers), self._similarity, params.tau, params.k_in,
                break_cycles=self._breaks_cycles))
        self._routing = routing
        self.ctx.emit(
            ev.TopologyBuilt(
                round=self.ctx.state.round,
                routing=self._routing.to_dict(),
                query_embeddings=self._embeddings[0],
                key_embeddings=self._embeddings[1],
                strategy=self.graph.name,
                rerouted=rerouted,
            )
        )

    @property
    def _breaks_cycles(self) -> bool:
        """Phased work runs in tiers, so its graph must be acyclic; single-pass delivers at a barrier."""
        return self.ctx.spec.settings.protocol != RoundProtocol.SINGLE_PASS

    def _reroute_now(self) -> bool:
        if not self._can_reroute or self._similarity is None:
            state = self.ctx.state
            if state.round <= 1 and state.phase != ev.Phase.MANAGER and self._breaks_cycles:
                why = "round 1 is a broadcast: the new values apply at round 2's routing"
            elif state.phase in (ev.Phase.PLAN, ev.Phase.DESCRIPTORS):
                why = "this round's graph is not built yet: the new values apply when it is"
            else:
                why = "this round's work has already started: the new values apply at the next routing"
            notice(self.ctx, why, "info")
            return False
        self._build_graph(rerouted=True)
        return True

    async def _decide(
        self, round_no: int, goal: str, outputs: dict[str, AgentResult], evaluation: Evaluation | None
    ) -> Any | None:
        start_phase(self.ctx, ev.Phase.MANAGER, "Manager reviews the round")
        order = [name for name in (self._routing.order if (self._routing and round_no > 1) else self.ctx.spec.workers)
                 if name in outputs]
        extra = f"TEST RESULTS:\n{evaluation.feedback}" if evaluation is not None else ""
        extra = "\n\n".join(part for part in (extra, self.steer.review_note(round_no)) if part)

        def build(_: list[str], texts: list[str]) -> list[dict[str, str]]:
            summary = _review_summary(order, outputs, texts)
            return self.calls.review_messages(round_no, self._max_rounds, goal, summary, extra)

        texts = [outputs[name].public for name in order]
        # Over the model's context, every worker's output is cut to an equal share (the round is one step).
        decision, status = await self.calls.manager_call(
            ev.CallKind.MANAGER, build([], texts), shrink=shrink_pieces(build, [], texts)
        )
        tests_fail = evaluation is not None and not evaluation.passed
        if decision is not None and decision.terminate and tests_fail and round_no < self._max_rounds:
            # The Manager may not end a run as solved while the tests fail.
            notice(self.ctx, "Manager wanted to stop but the tests fail: the run goes on", "info")
            decision.terminate = False
            decision.goal = decision.goal or "Fix the code so that every test passes."
        if decision is not None and decision.terminate and self.steer.veto(round_no):
            decision.terminate = False  # the user's continue: one more round, on the Manager's goal or this one
            decision.goal = decision.goal or goal
        self.ctx.emit(
            ev.ManagerDecided(
                round=round_no,
                terminate=bool(decision is not None and decision.terminate),
                next_goal=decision.goal if decision is not None else goal,
                reasoning=decision.reasoning if decision is not None else "",
                final_answer=decision.final_answer if decision is not None else "",
                status=status,
            )
        )
        return decision

    def _convergence(self, outputs: dict[str, AgentResult]) -> float | None:
        """Least similarity of any worker's public output to its previous round's; None in round 1.

        The run has converged when even the worker that changed most changed by less than
        1 - threshold (default 0.95) in difflib's character ratio: nobody is adding anything."""
        # A failed turn said nothing: "" after "" is no sign of convergence (a server failing every call).
        current = {name: r.public for name, r in outputs.items() if r.status != CallStatus.FAILED}
        previous = self._previous_public
        self._previous_public = current
        if not any(text.strip() for text in current.values()):
            # Copied templates, failures: the same nothing twice is no sign of convergence.
            notice(self.ctx, "no agent wrote its own content this round: not converged", "warning")
            return None
        if not previous:
            return None
        scores = [text_similarity(previous[name], text) for name, text in current.items() if name in previous]
        return round(min(scores), 4) if scores else None


def _review_summary(order: list[str], outputs: Mapping[str, Any], texts: list[str] | None = None) -> str:
    """The TEAM OUTPUTS of the Manager's review: each worker's output (``texts``: as cut to fit, else its
    public text), status and answer, in ``order``. ``outputs``: AgentResult or a recorded AgentFinished."""
    shown = texts if texts is not None else [outputs[name].public for name in order]
    return "\n\n".join(
        f"## {name} ({outputs[name].status})\n{text or '(no output)'}"
        + (f"\nAnswer: {outputs[name].answer}" if outputs[name].answer else "")
        for name, text in zip(order, shown, strict=True)
    )


def _render_inbox(deliveries: list[dict[str, Any]]) -> str:
    """Routed messages, strongest first (paper §3.4)."""
    ordered = sorted(deliveries, key=lambda d: (-(d["score"] or 0.0), d["src"]))
    return "\n\n".join(
        f"[from {d['src']}" + (f", relevance {d['score']:.2f}" if d["score"] is not None else "") + f"]\n{d['content']}"
        for d in ordered
    )


DYTOPO = register(
    MethodInfo(
        name="dytopo",
        fidelity=FIDELITY,  # where it departs from its paper
        summary="Manager goal each round; workers' query/key descriptors, MiniLM and tau/k_in decide who hears whom",
        round_one_broadcast=True,
        factory=lambda options, team: DyTopoMethod(
            DyTopoWiring(), payload=options["payload"], memory=options["memory"],
            prompt_order=options["prompt_order"], descriptor_context=options["descriptor_context"],
        ),
        options_model=DyTopoOptions,
        unit="round",
        substep="phase",
        what_if=True,
        uses_tau=True,
        steering=ROUND_ACTIONS | GRAPH_ACTIONS,
        paper="DyTopo (arXiv 2602.06039); phased rounds as the reference deployment, single-pass as Algorithm 1",
    )
)
