"""Multi-agent debate (Du et al., "Improving Factuality and Reasoning in Language Models through Multiagent
Debate", arXiv 2305.14325, §2 and Fig. 2): N agents answer a problem independently; then, for R rounds,
each reads the other agents' latest answers and gives an updated answer; the last round's answers are
aggregated by majority (``vote``).

A swarm-tui method plugin: registered through the ``swarm_tui.methods`` entry point (``DEBATE``), it drives
the run through its RunContext (core.runtime.run_context) and emits the app's generic events (agent calls,
one graph per round with typed "debate" edges, the messages each debater read), so the live view, sessions,
compare, bench and MCP show it with no code of the app naming it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import Field

from core.methods.registry import MethodInfo, MethodOptions, call_options, call_tables, with_calls
from core.routing.dytopo import Edge, RoutingResult
from core.runtime import events as ev
from core.runtime.control import StepBoundary
from core.runtime.engine import AgentResult, RunAborted
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.rosters import Team
from core.runtime.run_context import begin_round, finish_round, start_phase
from core.runtime.steering import SteerKind
from llm_debate.fidelity import DEVIATIONS
from llm_debate.prompts import (
    CALL_ANSWER,
    CALL_UPDATE,
    CALLS,
    debater_names,
    first_request,
    note_block,
    system_prompt,
    update_request,
)
from llm_debate.steer import DebateSteering
from llm_debate.vote import majority

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext

NAME = "llm-debate"
EDGE_DEBATE = "debate"  # the typed edge of a debate round: src's latest answer is in dst's request
CALL_LIMITS = (call_options("debater", "the debaters' calls", "work_call"),)


class _DebateOptions(MethodOptions):
    """The paper's two knobs (§3.3, Fig. 10-11: more agents and more rounds help)."""

    agents: int = Field(3, ge=2, le=6, description="N, the debaters (the paper's 3)")
    rounds: int = Field(2, ge=0, le=5, description="R, debate rounds after the first answers (the paper's 2)")


DebateOptions = with_calls(_DebateOptions, CALL_LIMITS)


class DebateMethod:
    name = NAME
    call_tables = call_tables(CALL_LIMITS)  # each call kind's settings table, for the engine's call_limits

    def __init__(self, agents: int, rounds: int) -> None:
        self.names = debater_names(agents)
        self.rounds = rounds

    def roster(self, team: Team) -> tuple[str, list[str], dict[str, str]]:
        return "", list(self.names), dict.fromkeys(self.names, "answers, reads the others' answers, updates its own")

    async def run(self, ctx: RunContext) -> RunOutcome:
        total = self.rounds + 1  # the independent answers, then R debate rounds
        params = ctx.state.params
        if params.max_rounds != total:
            ctx.record(replace(params, max_rounds=total))  # the header and the bar count the debate's rounds
        steering = DebateSteering(ctx, self.name, self.names)
        ctx.attach(steer=steering.apply)
        latest: dict[str, str] = {}
        done = self._resume(ctx, latest) if ctx.spec.fork is not None else 0
        for round_no in range(done + 1, total + 1):
            await ctx.checkpoint(StepBoundary.ROUND)
            begin_round(ctx, round_no)
            self._announce(ctx, round_no, latest)
            start_phase(ctx, ev.Phase.WORK, "independent answers" if round_no == 1 else f"debate round {round_no - 1}")
            await ctx.checkpoint(StepBoundary.PHASE)
            previous = dict(latest)
            results = await ctx.gather({  # ends the run (RunAborted) when the endpoint is down
                name: self._turn(ctx, name, round_no, previous, steering.take_notes(name)) for name in self.names
            })
            latest.update({name: r.public for name, r in results.items() if r.public})
            finish_round(ctx)
        return self._outcome(ctx, latest)

    async def _turn(self, ctx: RunContext, name: str, round_no: int, latest: dict[str, str],
                    notes: list[str]) -> AgentResult:
        domain, problem = ctx.spec.team.name, ctx.spec.problem
        if round_no == 1:
            call, request = CALL_ANSWER, first_request(problem, note_block(notes))
        else:
            others = {other: latest.get(other, "") for other in self.names if other != name}
            call = CALL_UPDATE
            request = update_request(problem, latest.get(name, ""), others, round_no, note_block(notes))
        messages = [{"role": "system", "content": system_prompt(name, len(self.names), domain)},
                    {"role": "user", "content": request}]
        result, _ = await ctx.call(name, call, messages, kind="debater")
        return result

    def _announce(self, ctx: RunContext, round_no: int, latest: dict[str, str]) -> None:
        """The round's graph (every debater reads every other from round 2 on; none in round 1) and what each
        debater reads, as the generic graph and message views show them."""
        pairs = [(src, dst) for dst in self.names for src in self.names if src != dst] if round_no > 1 else []
        n = len(self.names)
        routing = RoutingResult(
            names=list(self.names), tau=0.0, k_in=max(1, n - 1), similarity=[[0.0] * n for _ in range(n)],
            edges=[Edge(src, dst, 1.0, EDGE_DEBATE) for src, dst in pairs], order=list(self.names),
            tiers=[list(self.names)], paper_order=list(self.names), acyclic=not pairs,
        )
        ctx.emit(ev.TopologyBuilt(round=round_no, routing=routing.to_dict(), query_embeddings=[], key_embeddings=[],
                                  strategy=self.name))
        if pairs:
            deliveries = [{"src": src, "dst": dst, "score": 1.0, "content": latest.get(src, "")} for src, dst in pairs]
            ctx.emit(ev.MessagesRouted(round=round_no, deliveries=deliveries))

    def _outcome(self, ctx: RunContext, latest: dict[str, str]) -> RunOutcome:
        answer, who, agree = majority(ctx.spec.team.name, latest)
        if not answer:
            return RunOutcome(EndReason.FAILED, f"no debater answered ({agree})", "", "")
        rounds = f"{len(self.names)} debaters, {self.rounds} debate round(s)"
        return RunOutcome(EndReason.MAX_ROUNDS, f"{rounds}: majority {agree}", answer, f"extracted:{who}")

    def _resume(self, ctx: RunContext, latest: dict[str, str]) -> int:
        """A fork: re-emit the parent's rounds, take each debater's latest answer from them, and go on after
        the fork's round."""
        fork = ctx.spec.fork
        assert fork is not None
        seen = False
        for event in fork.history:
            ctx.record(event)  # announced again as it was; its RoundFinished puts the run where it left off
            if isinstance(event, ev.AgentFinished) and event.call in CALLS and event.public:
                latest[event.agent] = event.public
                ctx.record(AgentResult(event.agent, event.status, public=event.public, raw=event.raw))
                seen = True
        if not seen:
            raise RunAborted("this session is not a debate (no debater answers recorded): fork it with its strategy")
        return fork.round


def _build(options: dict[str, Any], team: Team) -> DebateMethod:
    return DebateMethod(options["agents"], options["rounds"])


_NO_GRAPH = "every debater reads every other each round: there is no edge to pin, cut or release"

DEBATE = MethodInfo(
    name=NAME,
    summary="N agents answer alone, then R rounds each reading the others' answers and updating; majority wins",
    factory=_build,
    options_model=DebateOptions,
    unit="round",
    substep="phase",
    layer="",  # the debaters of a round answer together
    steering=frozenset({SteerKind.NOTE, SteerKind.STOP}),
    steering_why={
        **dict.fromkeys((SteerKind.PIN, SteerKind.CUT, SteerKind.RELEASE), _NO_GRAPH),
        SteerKind.GOAL: "no Manager sets goals in a debate: send a note to the debaters instead",
    },
    paper="Multiagent Debate (Du et al., arXiv 2305.14325), §2; N=3 agents, R=2 rounds as the paper's main runs",
    fidelity=DEVIATIONS,
    demo="llm_debate.demo:DEMO",
)
