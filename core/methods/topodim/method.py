"""TopoDIM (Sun et al., "One-shot Topology Generation of Diverse Interaction Modes for Multi-Agent
Systems"): one typed graph per problem, generated once, then one pass over it.

Each ordered pair of agents gets a relation from {none, conditioned, feedback, debate} (§3.1); the
graph is sparsified (eq. 8), agents without an edge do not run (eq. 9), and the schedule is the paper's
breadth-first traversal with feedback and debate exchanges (§3.2, App. B). A decision-maker (the
team's Manager) reads every kept agent's latest answer and writes the final answer (Fig. 13). There is
no second round (Alg. 1 l.20).

This module is the protocol: one graph, the schedule's calls, the decision-maker's call; what the decision
reads and keeps (candidate checks, the answer pick, the final check) is core.methods.topodim.decision. The
generators that draw the graph (``[strategy.topodim] generator``: prior, random, policy, decentralized) are
core.methods.topodim.generators; the prompts are core.methods.topodim.prompts; the pure graph work (mask,
sparsification, node filter, schedule, diversity) is core.routing.topodim.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import Field

from core.methods.registry import (
    MethodError,
    MethodInfo,
    MethodOptions,
    call_options,
    call_tables,
    choice,
    one_unit,
    register,
    with_calls,
)
from core.methods.topodim.decision import candidate_checks, final_check, pick_answer
from core.methods.topodim.events import TopoDIMCall, TopoDIMGraph, describe_call
from core.methods.topodim.fidelity import DEVIATIONS as FIDELITY
from core.methods.topodim.generators import (
    CALL_GRAPH,
    GENERATORS,
    Generated,
    GraphGenerator,
    abort_if_unreachable,
    parse_edge_types,
)
from core.methods.topodim.prompts import (
    EXTRA_ROLES,
    PEER_CHARS,
    agent_instructions,
    clip_shrink,
    decider_instructions,
    decider_messages,
    peer,
    request,
    system_prompt,
    team_roles,
    user_prompt,
)
from core.methods.topodim.steer import TopoDIMSteering
from core.methods.topodim.threads import TopoDIMRequests
from core.routing.topodim import (
    EDGE_TYPES,
    MODES,
    CallMode,
    CallStep,
    TypedGraph,
    histogram,
    r_div,
    schedule,
    to_routing,
)
from core.runtime import events as ev
from core.runtime.agent_threads import THREAD_ORDERS
from core.runtime.context import Messages
from core.runtime.control import StepBoundary
from core.runtime.events import CallStatus
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.parsing import own_text
from core.runtime.prompts import PromptOrder
from core.runtime.rosters import Team
from core.runtime.run_context import begin_round, finish_round, notice, start_phase
from core.runtime.steering import SteerKind

if TYPE_CHECKING:
    from core.methods.topodim.policy import PolicySample, TopoDIMPolicy
    from core.runtime.engine import AgentResult
    from core.runtime.run_context import RunContext

NAME = "topodim"
CALLS = (*MODES, CALL_GRAPH)  # every call label this method sends


def usable_text(result: AgentResult) -> str:
    """A call's answer as text. A model that answers in the engine's JSON work shape anyway
    ({"public": ...}) is unwrapped rather than quoted raw to the next agent."""
    text = (result.public or result.raw or "").strip()
    if text.startswith("{") and text.endswith("}"):
        try:
            data = json.loads(text)
        except ValueError:
            return text
        if isinstance(data, dict) and isinstance(data.get("public"), str) and data["public"].strip():
            extra = data.get("answer")
            answer = f"\n\nFinal answer: \\boxed{{{extra}}}" if isinstance(extra, str | int | float) and extra else ""
            public: str = data["public"]
            return public.strip() + answer
    return text


# --- the method ------------------------------------------------------------------------------------


CALL_OPTIONS = (
    call_options("agent", "the agents' solution, review and debate calls", "work_call"),
    call_options("decider", "the decision-maker's graph and final calls", "manager_call"),
)


class TopoDIMMethod:
    """One typed graph, one pass, one decision (TopoDIM Alg. 1, inference)."""

    name = NAME
    call_tables = call_tables(CALL_OPTIONS)  # each call kind's settings table, for the engine's call_limits

    def __init__(
        self,
        options: dict[str, Any],
        team: Team,
        *,
        policy: TopoDIMPolicy | None = None,
        temperature: float | None = None,
        sample_seed: int | None = None,
    ) -> None:
        self.generator: str = options["generator"]
        self.alpha: float = float(options["alpha"])
        self.edge_types = parse_edge_types(options["edge_types"])
        self.size: int = int(options["agents"])
        self.generators = GraphGenerator(
            self.generator, alpha=self.alpha, edge_types=self.edge_types, p_none=float(options["p_none"]),
            temperature=float(temperature if temperature is not None else options["temperature"]),
            seed=int(options["seed"]), weights=str(options["weights"]), policy=policy, sample_seed=sample_seed,
        )
        available = len(team.workers) + len(EXTRA_ROLES.get(team.name, ()))
        if self.size > available:
            raise MethodError(f"[strategy.topodim] agents must be at most {available} for the {team.name} team")
        # core.methods.topodim.threads
        self.prompt_order: str = str(options.get("prompt_order", PromptOrder.CONVERSATION))
        self.last_graph: TypedGraph | None = None
        self.last_sample: PolicySample | None = None

    def roster(self, team: Team) -> tuple[str, list[str], dict[str, str]]:
        roles = {r.name: r.description for r in team_roles(team, self.size)}
        roles[team.manager.name] = (
            "The decision-maker: reads every kept agent's latest answer and writes the final answer"
            + (" (and, with the prior generator, proposes the typed graph)." if self.generator == "prior" else ".")
        )
        return team.manager.name, [r.name for r in team_roles(team, self.size)], roles

    # --- run --------------------------------------------------------------------------------
    async def run(self, ctx: RunContext) -> RunOutcome:
        self.ctx = ctx
        self.requests = TopoDIMRequests(ctx, self.prompt_order)
        self.roles = {r.name: r for r in team_roles(ctx.spec.team, self.size)}
        self.names = list(self.roles)
        self.decider = ctx.spec.team.manager.name
        steer = TopoDIMSteering(ctx, NAME, self.names, self.decider, lambda graph, steps: ctx.emit(
            self._graph_event(replace(generated, graph=graph), steps)))
        ctx.attach(reroute=self._no_reroute, steer=steer.apply)
        if ctx.spec.fork is not None:
            notice(ctx, "TopoDIM runs one round: a fork runs it again from the start", "info")
        await ctx.checkpoint(StepBoundary.ROUND)
        # One round only (Alg. 1 l.20): the round says so, whatever max_rounds the run was given.
        begin_round(ctx, 1, {**ctx.state.params.as_dict(), "max_rounds": 1})
        start_phase(ctx, ev.Phase.ROUTING, f"{self.generator} generator: the typed graph, once for this problem")
        generated = await self.generators.generate(ctx, self.roles, self.decider)
        graph = self.last_graph = generated.graph
        self.last_sample = generated.sample
        steps = schedule(self.names, graph, self.decider)
        routing = to_routing(graph, steps, ctx.state.params.tau, ctx.state.params.k_in)
        ctx.emit(
            ev.TopologyBuilt(
                round=1, routing=routing.to_dict(), query_embeddings=[], key_embeddings=[], strategy=NAME
            )
        )
        ctx.emit(self._graph_event(generated, steps))
        counts = histogram(graph.kept)
        plan = (
            f"One pass over the typed graph: {len(steps)} calls ({len(graph.active)} agents; "
            + ", ".join(f"{counts[k]} {k}" for k in EDGE_TYPES)
            + " edges), then the decision-maker answers."
        )
        if graph.fallback:
            plan = f"No edge survived: all {len(graph.active)} agents answer alone, then the decision-maker answers."
        ctx.emit(ev.ManagerDecided(round=1, terminate=False, next_goal=plan, reasoning="", plan=True))
        steer.graph, steer.steps = graph, steps  # editable by the user until its calls begin
        await ctx.checkpoint(StepBoundary.PHASE)
        graph = self.last_graph = steer.graph
        steps, steer.executing = steer.steps, True
        answers = await self._execute(steps[:-1], graph)
        await ctx.checkpoint(StepBoundary.PHASE)
        return await self._decide(steps[-1], graph, answers)

    def _no_reroute(self) -> bool:
        notice(self.ctx,
            "TopoDIM draws its graph once per problem: tau and k_in do not apply (its sparsity is the alpha option)",
            "info",
        )
        return False

    def _graph_event(self, generated: Generated, steps: list[CallStep]) -> TopoDIMGraph:
        graph = generated.graph
        edges = [{"src": e.src, "dst": e.dst, "kind": e.kind, "p": round(e.p, 6), "status": "kept"} for e in graph.kept]
        edges += [{"src": e.src, "dst": e.dst, "kind": e.kind, "p": round(e.p, 6), "status": "pruned"}
                  for e in graph.pruned]
        edges += [{"src": e.src, "dst": e.dst, "kind": e.kind, "p": round(e.p, 6), "status": "masked"}
                  for e in graph.masked]
        decisions = [
            {
                "src": d.src,
                "dst": d.dst,
                "relation": d.relation,
                "p": round(d.p, 6),
                "dist": [round(x, 6) for x in d.dist],
                "masked": d.masked,
                "masked_p": round(d.masked_p, 6),
            }
            for d in graph.decisions
        ]
        return TopoDIMGraph(
            round=1,
            generator=generated.shown(self.generator),
            alpha=self.alpha,
            temperature=generated.temperature,
            seed=generated.seed,
            edge_types=list(self.edge_types),
            names=list(graph.names),
            decisions=decisions,
            edges=edges,
            active=list(graph.active),
            dropped=list(graph.dropped),
            fallback=graph.fallback,
            histogram=histogram(graph.kept),
            r_div=round(r_div(graph.kept), 6),
            calls=[
                {"index": s.index, "total": s.total, "agent": s.agent, "mode": s.mode, "partner": s.partner,
                 "kind": s.kind}
                for s in steps
            ],
            weights=generated.weights,
            ignored=graph.ignored[:20] + ([f"and {len(graph.ignored) - 20} more"] if len(graph.ignored) > 20 else []),
        )

    # --- execution (§3.2 "Execution order", App. B) ------------------------------------------------
    async def _execute(self, steps: list[CallStep], graph: TypedGraph) -> dict[str, str]:
        ctx = self.ctx
        answers: dict[str, str] = {}  # each agent's latest answer (solution, revision or defence)
        reviews: dict[tuple[str, str], str] = {}  # (source, reviewer) -> evaluation
        debates: dict[tuple[str, str], list[str]] = {}  # (source, challenger) -> [claim, challenge, defence]
        self.notes: dict[str, str] = {}  # how an agent's latest answer came about, for the decision-maker
        inputs = {n: [e.src for e in graph.kept if e.dst == n and e.kind == "conditioned"] for n in self.names}
        for position, step in enumerate(steps):
            if position:
                await ctx.checkpoint(StepBoundary.PHASE)
            what = describe_call(step.mode, step.agent, step.partner)
            start_phase(ctx, ev.Phase.WORK, f"call {step.index}/{step.total}: {what}")
            missing = request(step, answers, reviews, debates, inputs, self.roles)[2]
            if missing:
                ctx.emit(self._call_event(step, skipped=True, reason=missing))
                notice(ctx, f"TopoDIM call {step.index}/{step.total} skipped: {missing}", "warning", step.agent)
                continue
            ctx.emit(self._call_event(step))

            def user(problem: str | None, limit: int, step: CallStep = step) -> str:
                body, ask, _ = request(step, answers, reviews, debates, inputs, self.roles, limit)
                return user_prompt(problem, body, ask)

            system = system_prompt(self.roles[step.agent], self.names, ctx.spec.team.name)
            messages, shrink, turn = self.requests.agent(step.agent, system, user)
            ask = request(step, answers, reviews, debates, inputs, self.roles)[1]
            told = agent_instructions(self.roles[step.agent], self.names, ctx.spec.team.name, ask)
            # A reply that only repeats its instructions is asked for once more, then not passed on (issue 44).
            result, _ = await ctx.call(step.agent, step.mode, messages, shrink=shrink, kind="agent",
                                       parser=own_text(told))
            abort_if_unreachable(result)
            text = usable_text(result) if result.status == CallStatus.DONE else ""
            if turn is not None and result.status == CallStatus.DONE:
                turn.keep(result.raw)  # the agent's next call begins with this one and its reply
            if not text:
                continue
            if step.mode == CallMode.SOLUTION:
                answers[step.agent] = text
                self.notes[step.agent] = ""
            elif step.mode == CallMode.EVALUATE:
                reviews[(step.partner, step.agent)] = text
            elif step.mode == CallMode.REVISE:
                answers[step.agent] = text
                self.notes[step.agent] = f", revised after {step.partner}'s review"
            elif step.mode == CallMode.CHALLENGE:
                debates[(step.partner, step.agent)] = [answers.get(step.partner, ""), text]
            elif step.mode == CallMode.DEFEND:
                debates.setdefault((step.agent, step.partner), ["", ""]).append(text)
                answers[step.agent] = text
                self.notes[step.agent] = f", after debating {step.partner}"
        return answers

    def _call_event(self, step: CallStep, *, skipped: bool = False, reason: str = "") -> TopoDIMCall:
        return TopoDIMCall(
            round=1,
            index=step.index,
            total=step.total,
            agent=step.agent,
            mode=step.mode,
            partner=step.partner,
            kind=step.kind,
            skipped=skipped,
            reason=reason,
        )

    # --- the decision (Fig. 13; core.methods.topodim.decision) ------------------------------------
    async def _decide(self, step: CallStep, graph: TypedGraph, answers: dict[str, str]) -> RunOutcome:
        ctx = self.ctx
        start_phase(ctx, ev.Phase.MANAGER, f"call {step.index}/{step.total}: the decision-maker reads every kept agent")
        checks, verdicts = await candidate_checks(ctx, answers)
        order = [n for n in graph.active if answers.get(n)]
        domain = ctx.spec.team.name

        def make(limit: int) -> Messages:
            peers = "\n\n".join(peer(self.roles, n, answers[n], self.notes.get(n, ""), limit) for n in order)
            return decider_messages(self.decider, len(self.names), domain, ctx.spec.problem, peers, len(order), checks)

        ctx.emit(self._call_event(step))
        messages = make(PEER_CHARS)
        result, _ = await ctx.call(self.decider, CallMode.FINAL, messages, kind="decider",
                                   parser=own_text(decider_instructions(messages)), shrink=clip_shrink(make))
        abort_if_unreachable(result)
        text = usable_text(result) if result.status == CallStatus.DONE else ""
        answer, source = pick_answer(ctx.spec.team, text, answers, verdicts)
        if not text:
            notice(ctx, "TopoDIM: the decision-maker gave no answer: the team's best answer is used", "warning")
        await final_check(ctx, answer, self.decider)
        ctx.emit(
            ev.ManagerDecided(
                round=1,
                terminate=True,
                next_goal="",
                reasoning=f"decision-maker read {len(order)} agents' answers"
                + ("" if text else "; it gave no answer, so the team's best answer stands"),
                final_answer=answer,
                status=result.status,
            )
        )
        finish_round(ctx)
        counts = histogram(graph.kept)
        detail = (
            f"one-shot complete: {step.total} calls over {len(graph.kept)} typed edges "
            f"({counts['conditioned']} conditioned, {counts['feedback']} feedback, {counts['debate']} debate), "
            f"{len(graph.active)} of {len(graph.names)} agents"
        )
        if graph.fallback:
            detail = f"one-shot complete: no edge survived, {len(graph.active)} agents answered alone"
        return RunOutcome(EndReason.ONE_SHOT, detail, answer, source)


# --- registration -----------------------------------------------------------------------------------


def _factory(options: dict[str, Any], team: Team) -> TopoDIMMethod:
    return TopoDIMMethod(options, team)


class _TopoDIMOptions(MethodOptions):
    """TopoDIM's options (eq. 6's temperature, eq. 8's alpha, Fig. 5a's edge types, §3.4's generators)."""

    generator: str = choice(
        "prior", GENERATORS,
        "how the typed graph is drawn: prior (the Manager writes it), random (the paper's w/ Rand ablation), policy "
        "(the R-GCN generator) or decentralized (its distilled per-agent policies, §3.4)",
    )
    alpha: float = Field(0.7, ge=0.0, le=1.0,
                         description="sparsity budget of eq. 8: keep the top (1 - alpha) of the sampled edges")
    edge_types: str = Field("conditioned,feedback,debate", description=(
        "allowed edge types (Fig. 5a: conditioned | conditioned,feedback | conditioned,feedback,debate)"))
    p_none: float = Field(0.25, ge=0.0, le=1.0, description="random generator: probability of no edge for a pair")
    temperature: float = Field(0.5, ge=0.05, le=5.0,
                               description="policy generator: decoder temperature of eq. 6 (training ends at 0.5)")
    seed: int = Field(0, ge=0, description="sampler seed (with the problem text it fixes the graph)")
    agents: int = Field(5, ge=2, le=6,
                        description="team size (the paper runs 5: the domain's roles, then TopoDIM's extra roles)")
    weights: str = Field("", description=(
        "policy/decentralized: weights file (default: the user data dir's swarm-tui/topodim/policy.pt)"))
    prompt_order: str = choice(
        PromptOrder.CONVERSATION, THREAD_ORDERS,
        "conversation: an agent called more than once keeps one growing chat (each call appends its request and "
        "the kept reply), so a server's prefix cache prefills each token once; paper: every request rebuilt",
    )


TopoDIMOptions = with_calls(_TopoDIMOptions, CALL_OPTIONS)

TOPODIM = register(
    MethodInfo(
        name=NAME,
        fidelity=FIDELITY,  # where it departs from its paper
        demo="core.methods.topodim.demo:DEMO",  # its scripted replies (--demo, bench --demo)
        summary="one typed graph per problem (conditioned, feedback, debate edges), one pass, a decision-maker",
        # One graph, one round (TopoDIM Alg. 1): nothing to continue.
        fork_refusal="cannot fork a TopoDIM run: it is one round over one graph; run the problem again instead",
        factory=_factory,
        options_model=TopoDIMOptions,
        unit="step",  # one pass over its typed graph: a step, not a DyTopo round
        unit_limit=one_unit,
        substep="call",
        steering=frozenset({SteerKind.EDGE_ADD, SteerKind.EDGE_REMOVE, SteerKind.STOP}),
        steering_why=dict.fromkeys(
            (SteerKind.PIN, SteerKind.CUT, SteerKind.RELEASE, SteerKind.GOAL),
            "its graph is typed and built once: add or remove a typed edge (edge_add, edge_remove) before it executes",
        ),
        paper="TopoDIM (Sun et al.): one-shot typed topology, eq. 4-12; prior/random generators untrained",
    )
)
