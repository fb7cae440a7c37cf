"""A method that no file of the app names: what the registry's test hook (core.methods.registry.register)
must be enough to list, launch and run. One agent answers once; its demo script ships here, as a plugin's
would (MethodInfo.demo)."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from core.methods.registry import MethodInfo, MethodOptions, register, registered, unregister
from core.runtime import events as ev
from core.runtime.control import StepBoundary
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.rosters import Team
from core.runtime.run_context import RunContext, begin_round, finish_round, start_phase
from core.runtime.scripted import MethodDemo, RequestInfo

NAME = "echo-dummy"
CALL = "echo-dummy-say"
AGENT = "Echo"
ANSWER = "the echo's answer"


class EchoOptions(MethodOptions):
    loudness: int = Field(2, ge=1, le=5, description="how loud the echo is")


class EchoMethod:
    name = NAME
    call_tables: Mapping[str, str] = {}

    def __init__(self, loudness: int) -> None:
        self.loudness = loudness

    def roster(self, team: Team) -> tuple[str, list[str], dict[str, str]]:
        return "", [AGENT], {AGENT: "repeats the problem's answer"}

    async def run(self, ctx: RunContext) -> RunOutcome:
        await ctx.checkpoint(StepBoundary.ROUND)
        begin_round(ctx, 1)
        start_phase(ctx, ev.Phase.WORK, "one echo")
        await ctx.checkpoint(StepBoundary.PHASE)
        messages = [{"role": "user", "content": f"Echo this {self.loudness} times: {ctx.spec.problem}"}]
        result, _ = await ctx.call(AGENT, CALL, messages)
        finish_round(ctx)
        return RunOutcome(EndReason.SINGLE, "one echo", result.public, f"extracted:{AGENT}")


def echo_reply(info: RequestInfo) -> str | None:
    return ANSWER if info.call == CALL else None


INFO = MethodInfo(
    name=NAME,
    summary="an echo registered by a test through the registry's hook",
    factory=lambda options, team: EchoMethod(options["loudness"]),
    options_model=EchoOptions,
    unit="call",
    demo=MethodDemo(echo_reply),
)


def install() -> None:
    """Register the dummy (the test hook); ``remove`` takes it away again."""
    if NAME not in registered():
        register(INFO)


def remove() -> None:
    unregister(NAME)
