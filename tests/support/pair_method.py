"""A method registered by a test (core.methods.registry.register, as a plugin's entry point would): two agents
answer in each of two rounds and read nothing, with no Manager in its roster, so no round has a goal. What the
run screen must show for any method whose team has no Manager."""

from __future__ import annotations

from collections.abc import Mapping

from core.methods.registry import MethodInfo, MethodOptions, register, registered, unregister
from core.runtime import events as ev
from core.runtime.control import StepBoundary
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.rosters import Team
from core.runtime.run_context import RunContext, begin_round, finish_round, start_phase
from core.runtime.run_types import AgentResult
from core.runtime.scripted import MethodDemo, RequestInfo

NAME = "pair-dummy"
CALL = "pair-dummy-answer"
AGENTS = ("Left", "Right")
ROUNDS = 2
ANSWER = "42"


class PairMethod:
    name = NAME
    call_tables: Mapping[str, str] = {}

    def roster(self, team: Team) -> tuple[str, list[str], dict[str, str]]:
        return "", list(AGENTS), dict.fromkeys(AGENTS, "answers on its own")  # "": no Manager

    async def run(self, ctx: RunContext) -> RunOutcome:
        answer = ""
        for round_no in range(1, ROUNDS + 1):
            await ctx.checkpoint(StepBoundary.ROUND)
            begin_round(ctx, round_no)
            start_phase(ctx, ev.Phase.WORK, "both answer")
            await ctx.checkpoint(StepBoundary.PHASE)
            results = await ctx.gather({name: self._turn(ctx, name) for name in AGENTS})
            answer = results[AGENTS[0]].public or answer
            finish_round(ctx)
        return RunOutcome(EndReason.MAX_ROUNDS, "two rounds", answer, f"extracted:{AGENTS[0]}")

    async def _turn(self, ctx: RunContext, name: str) -> AgentResult:
        result, _ = await ctx.call(name, CALL, [{"role": "user", "content": ctx.spec.problem}])
        return result


def pair_reply(info: RequestInfo) -> str | None:
    return ANSWER if info.call == CALL else None


INFO = MethodInfo(
    name=NAME,
    summary="two agents answering on their own, no Manager (registered by a test)",
    factory=lambda options, team: PairMethod(),
    options_model=MethodOptions,
    unit="round",
    demo=MethodDemo(pair_reply),
)


def install() -> None:
    """Register the method (the registry's test hook); ``remove`` takes it away again."""
    if NAME not in registered():
        register(INFO)


def remove() -> None:
    unregister(NAME)
