"""Fork: continue a recorded run live from one of its completed rounds.

The fork carries the parent's recorded events up to that round. The engine re-emits them (so the new
session is self-contained and the screen shows the history) and rebuilds the agents' memory from them
exactly as it did live, then runs the next round with the goal the Manager set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from core.methods.catalogue import get_method_info
from core.methods.registry import MethodError
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.dispatch import of_kind
from core.runtime.engine import ForkPoint
from core.sessions.model import Session

# Events that belong to the parent run as a whole, not to its rounds: the fork emits its own.
_RUN_LEVEL = (ev.RunStarted, ev.RunFinished, ev.ControlChanged)

FALLBACK_GOAL = "Continue from the previous round: check the team's answer, fix what is wrong and finish it."


def fork_on_demo(session: Session, asked_demo: bool, named_endpoint: str | None) -> bool:
    """Whether a fork runs against the scripted demo server: when asked (--demo), or when the session was a
    demo run and the user names no endpoint (--base-url, the config file's base_url). A demo's fork then
    just works, instead of failing on a default endpoint nobody meant."""
    return asked_demo or (session.demo and not named_endpoint)


def with_recorded_method(settings: Settings, session: Session, strategy: str | None = None) -> Settings:
    """The settings a fork of ``session`` runs with: the recorded run's method (``strategy`` when the fork asks
    for another) and, for the recorded method, the options the parent ran with over the config file's table.
    A face's own options (the CLI's ``-o``) go on top (tui.cli.options.with_method_options). Every face's
    fork asks this (the CLI's ``replay --fork``, the replay screen's f / F), so a fork keeps its options."""
    recorded = session.metadata.strategy
    chosen = strategy or recorded
    carried = carried_options(session) if chosen == recorded else {}
    options = {**settings.strategy_options.get(chosen, {}), **carried}
    return replace(settings, strategy=chosen,
                   strategy_options={**settings.strategy_options, chosen: options} if options
                   else settings.strategy_options)


def carried_options(session: Session) -> dict[str, Any]:
    """The method options the parent ran with, as recorded (defaults included), without those this version of
    its method no longer has, no longer allows, or that were never set (None): an old session forks with what
    still applies, and no face meets a bad recorded value after its fork screen opened."""
    try:
        info = get_method_info(session.metadata.strategy)
    except MethodError:  # a method this version lacks: the fork's own check says so, in one line
        return {}
    known = {spec.name for spec in info.options}
    recorded = {k: v for k, v in session.method_options.items() if k in known and v is not None}
    return {k: v for k, v in recorded.items() if _allowed(info.resolve, k, v)}


def _allowed(resolve: Callable[[dict[str, Any]], object], key: str, value: Any) -> bool:
    try:
        resolve({key: value})
    except MethodError:
        return False
    return True


def fork_refusal(strategy: str) -> str:
    """Why a run of ``strategy`` cannot be forked (its MethodInfo), or ""."""
    try:
        return get_method_info(strategy).fork_refusal
    except MethodError:  # a method this version lacks: its events decide what can be continued
        return ""


def fork_point(session: Session, round_no: int, session_ref: str) -> ForkPoint:
    """Where to continue from. ValueError (one line) if round_no is not a completed round."""
    completed = session.completed_rounds
    refusal = fork_refusal(session.metadata.strategy)  # TopoDIM: one graph, one round: nothing to continue
    if refusal:
        raise ValueError(refusal)
    if not 1 <= round_no <= completed:
        raise ValueError(f"cannot fork from round {round_no}: the session has {completed} completed round(s)")
    history = [
        e for e in session.replay_events() if not isinstance(e, _RUN_LEVEL) and getattr(e, "round", 0) <= round_no
    ]
    decisions = [e for e in of_kind(history, ev.ManagerDecided) if e.round == round_no and not e.plan]
    goal = decisions[-1].next_goal if decisions and decisions[-1].next_goal and not decisions[-1].terminate else ""
    return ForkPoint(
        parent={"session": str(session_ref), "round": round_no},
        round=round_no,
        history=history,
        goal=goal or FALLBACK_GOAL,
    )
