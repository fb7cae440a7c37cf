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

This module is the round loop and the method's options; each round's work is core.methods.dytopo.rounds (its
deliveries core.methods.dytopo.deliveries), routing core.methods.dytopo.router, the Manager
core.methods.dytopo.manager and the convergence check core.methods.dytopo.convergence.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from core.methods.dytopo.calls import DyTopoCalls
from core.methods.dytopo.convergence import OutputDrift
from core.methods.dytopo.deliveries import PAYLOAD_AUTO, PAYLOAD_BOTH, PAYLOAD_PRIVATE, PAYLOADS, render_inbox
from core.methods.dytopo.fidelity import DEVIATIONS as FIDELITY
from core.methods.dytopo.history import HistoryReplay
from core.methods.dytopo.manager import DyTopoManager
from core.methods.dytopo.rebuild import ConversationRebuild
from core.methods.dytopo.rounds import RoundWork
from core.methods.dytopo.router import DescriptorRouter
from core.methods.dytopo.steer import DyTopoSteering
from core.methods.registry import MethodInfo, MethodOptions, call_options, call_tables, choice, register, with_calls
from core.routing.wiring import DyTopoWiring, WiringRule
from core.runtime import events as ev
from core.runtime.config import RoundProtocol
from core.runtime.control import StepBoundary
from core.runtime.engine import AgentResult
from core.runtime.memory import MEMORY_RULES, MemoryRule
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.prompts import PROMPT_ORDERS, PromptOrder
from core.runtime.rosters import Team
from core.runtime.run_context import begin_round, finish_round, notice
from core.runtime.steering import GRAPH_ACTIONS, ROUND_ACTIONS

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext


# Shared by DyTopo and the baselines that run its rounds (core.methods.baselines.method).
def memory_option() -> Any:
    return choice(
        MemoryRule.ACCUMULATE, MEMORY_RULES,
        "what a worker's prompt shows of its memory: accumulate (eq. 3: every earlier output and message) or "
        "latest (only the newest message per teammate: fewer tokens, not the paper)",
    )


# Shared by DyTopo and its baselines: the order of a worker prompt's parts (core.runtime.prompts).
def prompt_order_option() -> Any:
    return choice(
        PromptOrder.CONVERSATION, PROMPT_ORDERS,
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
    """The DyTopo round loop over a wiring rule (DyTopo's own routing, or a baseline's fixed graph). Each round's
    work is core.methods.dytopo.rounds, its routing core.methods.dytopo.router, the Manager's plan and reviews
    core.methods.dytopo.manager and the convergence check core.methods.dytopo.convergence."""

    call_tables = call_tables(CALL_OPTIONS)  # each call kind's settings table, for the engine's call_limits

    def __init__(
        self,
        graph: WiringRule | None = None,
        *,
        name: str | None = None,
        round_limit: int | None = None,
        payload: str = PAYLOAD_AUTO,
        memory: str = MemoryRule.ACCUMULATE,
        prompt_order: str = PromptOrder.CONVERSATION,
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
        self.drift = OutputDrift()

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
        self.router = DescriptorRouter(ctx, self.graph, self.steer, acyclic=self._breaks_cycles)
        self.work = RoundWork(ctx, self.calls, self.steer, self.router, self.payload)
        self.manager = DyTopoManager(ctx, self.calls, self.steer, lambda: self._max_rounds)
        ctx.attach(reroute=self.router.reroute_now, steer=self.steer.apply)
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
            self.router.can_reroute = False
            begin_round(self.ctx, round_no)
            if round_no == 1:
                goal = await self.manager.plan()
                await self.ctx.checkpoint(StepBoundary.PHASE)
            goal = self.steer.round_goal(round_no, goal)  # a goal the user gave replaces the Manager's
            outputs = await self._round_work(round_no, goal)
            await self.ctx.checkpoint(StepBoundary.PHASE)
            outputs = await self.steer.redo_outputs(outputs, self._work_call)
            evaluation = await self.ctx.evaluate(round_no, outputs)
            if evaluation is not None:
                self.calls.remember_feedback(round_no, evaluation.feedback)
            decision = await self.manager.review(round_no, goal, outputs, evaluation, self.router.routing)
            convergence = self.drift.measure(self.ctx, outputs)
            finish_round(self.ctx, convergence)
            outcome = self._outcome(round_no, decision, convergence)
            if outcome is not None:
                return outcome
            if decision is not None and decision.goal:
                goal = decision.goal

    async def _round_work(self, round_no: int, goal: str) -> dict[str, AgentResult]:
        if self.ctx.spec.settings.protocol == RoundProtocol.SINGLE_PASS:
            # The paper routes from round 1 (Algorithm 1): descriptors come with the first replies.
            return await self.work.single_pass_round(goal)
        if round_no == 1:
            # The reference's phased protocol: round 1 is a broadcast, routing starts in round 2.
            return await self.work.broadcast_round(goal)
        return await self.work.phased_round(goal)

    def _outcome(self, round_no: int, decision: Any | None, convergence: float | None) -> RunOutcome | None:
        """How the run ends after this round: the Manager's end, max_rounds, or convergence (§3.5.2); None: on."""
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
        return None

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
        return self.router.reroute_on_steer()

    def _replay_history(self, history: list[ev.Event]) -> None:
        """A fork: re-emit the parent's rounds and rebuild memory (and the conversations) as the live run did."""
        memory = HistoryReplay(self.ctx, self.calls, self.steer)
        rebuild = ConversationRebuild(self.calls, self._max_rounds, render_inbox, self.ctx.spec.team.manager.name)
        for event in history:
            self.ctx.record(event)  # announced again as it was; its RoundFinished restores round and tokens
            rebuild.see(event)
            memory.read(event)
        self.router.routing = memory.routing or self.router.routing
        if memory.previous_public is not None:
            self.drift.previous = memory.previous_public

    @property
    def _breaks_cycles(self) -> bool:
        """Phased work runs in tiers, so its graph must be acyclic; single-pass delivers at a barrier."""
        return self.ctx.spec.settings.protocol != RoundProtocol.SINGLE_PASS


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
