"""A DMoA fork (Wu et al., arXiv 2605.15706, Alg. 2): continue a recorded run after its step r. The history is
re-emitted; the GRU's hidden state h is rebuilt by feeding the recorded contexts X_1..X_r to the router (with
the weights it has now); X_{r+1} (eq. 7 / 9) and P_last come from step r's routed responses, the test results
step r+1 reads from step r's record, the code's check takes in each step's code and tests again (so the fork's
first check runs what the parent's next one did), and each caller's conversation is rebuilt
(core.methods.dmoa.rebuild)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)
from core.methods.dmoa.events import CALL_STEP, DmoaRouted
from core.methods.dmoa.rebuild import DmoaRebuild, PendingNotes
from core.methods.dmoa.routing import context_vector
from core.methods.dmoa.step import StepState
from core.runtime import events as ev
from core.runtime.dispatch import EventTable
from core.runtime.engine import AgentResult, CheckedRound, RunAborted
from core.runtime.run_context import notice

if TYPE_CHECKING:
    from core.methods.dmoa.selector import StepRouter
    from core.methods.dmoa.threads import DmoaRequests
    from core.runtime.run_context import RunContext


@dataclass
class _Replay:
    """A fork's replay of the parent's steps: each step's routing and its routed agents' responses."""

    ctx: RunContext
    routed: dict[int, DmoaRouted] = field(default_factory=dict)
    outputs: dict[int, dict[str, str]] = field(default_factory=dict)
    results: dict[int, dict[str, AgentResult]] = field(default_factory=dict)  # what each step's check took in


REPLAY: EventTable[_Replay] = EventTable()  # what a fork rebuilds from each recorded event


@REPLAY.on(DmoaRouted)
def _replay_routed(replay: _Replay, event: DmoaRouted) -> None:
    replay.routed[event.round] = event


@REPLAY.on(ev.AgentFinished)
def _replay_step(replay: _Replay, event: ev.AgentFinished) -> None:
    if event.call == CALL_STEP and event.public:
        replay.outputs.setdefault(event.round, {})[event.agent] = event.public
        result = AgentResult(event.agent, event.status, public=event.public, raw=event.raw)
        replay.ctx.record(result)
        replay.results.setdefault(event.round, {})[event.agent] = result


@dataclass
class Resumed:
    """Where a fork goes on: after step ``round``, with ``state``; the recorded steps' k (empty when none of
    step r's routed agents answered); the test results step r left for the next step's agents; the person's
    notes no call had read yet."""

    round: int
    state: StepState
    k_history: list[int]
    feedback: str = ""
    notes: PendingNotes = field(default_factory=PendingNotes)


async def resume(ctx: RunContext, router: StepRouter, requests: DmoaRequests) -> Resumed:
    """Continue a recorded DMoA run after its step r: re-emit the history, rebuild h by feeding the
    recorded contexts X_1..X_r to the router (with the weights it has now), X_{r+1} and P_last
    from step r's routed responses, and each caller's conversation."""
    fork = ctx.spec.fork
    assert fork is not None
    replay = _Replay(ctx)
    rebuild = DmoaRebuild(requests, router.pool, router.k_max)
    for event in fork.history:
        ctx.record(event)  # announced again as it was; its RoundFinished restores round and tokens
        REPLAY.dispatch(replay, event)
        rebuild.see(event)
    rebuild.finish()
    for number in sorted(replay.results):  # the code's check takes in each step's code and tests again
        ctx.record(CheckedRound(replay.results[number]))
    feedback = rebuild.results_of(fork.round) or ""
    routed, outputs = replay.routed, replay.outputs
    last = routed.get(fork.round)
    if last is None:
        raise RunAborted("this session is not a DMoA run (no router steps recorded): fork it with its own strategy")
    if last.router != router.kind or last.tau != router.tau or last.k_max != router.k_max:
        notice(ctx,
            f"the recorded steps used router {last.router} (tau {last.tau:g}, K {last.k_max}); the fork goes on "
            f"with router {router.kind} (tau {router.tau:g}, K {router.k_max}), as its options ask",
            "info",
        )
    if router.session is not None:
        for number in sorted(routed):
            await asyncio.to_thread(router.session.step, np.asarray(routed[number].context, dtype=np.float64))
    answered = [(name, a) for name, a in zip(last.selected, last.alpha, strict=False)
                if name in outputs.get(fork.round, {})]
    texts = [outputs[fork.round][name] for name, _ in answered]
    if not answered:
        return Resumed(fork.round, StepState([], np.asarray(last.context, dtype=np.float64), [], []), [], feedback,
                       rebuild.notes)
    vectors = np.asarray(await ctx.embed(texts), dtype=np.float64)
    alpha = np.asarray([a for _, a in answered], dtype=np.float64)
    alpha = alpha / alpha.sum()
    x_next = context_vector(alpha, vectors)
    state = StepState(list(zip([n for n, _ in answered], texts, strict=True)), x_next,
                      [n for n, _ in answered], [float(a) for a in alpha])
    return Resumed(fork.round, state, [routed[n].k for n in sorted(routed)], feedback, rebuild.notes)
