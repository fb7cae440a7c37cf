"""A TopoWeaver-R1 fork: the parent's turns re-emitted and what later turns read (the history H_k of
eq. 3, every agent's memory Mem_i of eq. 15, the best answer) rebuilt as the live run had it, and with them each
caller's conversation (core.methods.topoweaver.rebuild)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.methods.topoweaver.events import PlanProposed, TurnEnded
from core.methods.topoweaver.plan import FALLBACK_NOTES, Plan, Validation
from core.methods.topoweaver.prompts import CALL_AGENT
from core.methods.topoweaver.rebuild import TopoWeaverRebuild
from core.methods.topoweaver.threads import TopoWeaverRequests
from core.methods.topoweaver.turns import TurnHistory, TurnRecord
from core.runtime import events as ev
from core.runtime.dispatch import EventTable
from core.runtime.engine import AgentResult, Evaluation

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext


@dataclass
class _Replay:
    """A fork's replay of the parent's events: the turns whose end is still to come, the last round kept."""

    ctx: RunContext
    history: TurnHistory
    domain: str
    rebuild: TopoWeaverRebuild
    pending: dict[int, TurnRecord] = field(default_factory=dict)
    last: int = 0


REPLAY: EventTable[_Replay] = EventTable()  # what a fork rebuilds from each recorded event


def replay_history(ctx: RunContext, events: list[ev.Event], history: TurnHistory, domain: str,
                   requests: TopoWeaverRequests) -> int:
    """Re-emit the parent's events and rebuild ``history`` and the conversations of ``requests`` from them.
    Returns the last turn kept."""
    replay = _Replay(ctx, history, domain, TopoWeaverRebuild(requests, history, domain))
    for event in events:
        ctx.record(event)  # announced again as it was
        REPLAY.dispatch(replay, event)
    replay.rebuild.finish()
    return replay.last


@REPLAY.on(PlanProposed)
def _replay_plan(replay: _Replay, event: PlanProposed) -> None:
    validation = Validation(event.tag, event.yaml, rule=event.rule, message=event.message,
                            offender=event.offender, warnings=list(event.warnings))
    # A fallback plan's note is not shown with it, but its agents' view held it (TurnHistory.view).
    plan = Plan.from_layers(event.difficulty, event.steps, FALLBACK_NOTES if event.fallback else event.notes) if (
        event.steps) else None
    validation.plan = plan if event.valid else None
    waiting = replay.pending.get(event.round)
    if event.by_user and waiting is not None:  # a person's plan runs in the turn the Orchestrator's reply keeps
        waiting.plan, waiting.fallback = plan, False
        return
    replay.pending[event.round] = TurnRecord(event.round, validation, event.raw, plan, event.fallback)


@REPLAY.on(ev.RoundStarted)
def _replay_turn_start(replay: _Replay, event: ev.RoundStarted) -> None:
    replay.rebuild.round_started(event)


@REPLAY.on(ev.AgentFinished)
def _replay_agent(replay: _Replay, event: ev.AgentFinished) -> None:
    waiting = replay.pending.get(event.round)
    replay.rebuild.call(event, waiting.plan if waiting is not None else None)
    if event.call != CALL_AGENT:
        return
    replay.history.memory.setdefault(event.agent, {})[event.round] = event.public
    replay.history.ran.setdefault(event.round, []).append(event.agent)
    replay.ctx.record(AgentResult(event.agent, event.status, public=event.public, raw=event.raw))


@REPLAY.on(ev.TestRun)
def _replay_test(replay: _Replay, event: ev.TestRun) -> None:
    replay.ctx.record(Evaluation(passed=event.passed, feedback=f"{event.outcome}: {event.detail}"))


@REPLAY.on(TurnEnded)
def _replay_turn(replay: _Replay, event: TurnEnded) -> None:
    record = replay.pending.pop(event.round, None)
    if record is None:
        return
    record.status, record.passed = event.status, event.passed
    record.failing_test, record.log, record.source = event.failing_test, event.log, event.source_agent
    replay.history.records.append(record)
    replay.history.remember_answer(record, replay.domain)


@REPLAY.on(ev.RoundFinished)
def _replay_round(replay: _Replay, event: ev.RoundFinished) -> None:
    replay.last = event.round  # the run stands where this round left it (record)
