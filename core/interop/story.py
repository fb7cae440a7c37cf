"""What inspect's transcript shows of a swarm run: one item per graph, decision, steering action, code check and
the end, as (source, data). Shared by the live solver (core.interop.inspect_solver) and the session export
(core.interop.inspect_log); plain data, no inspect import."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.runtime import events as ev

StoryItem = tuple[str, dict[str, Any]]


def _graph(event: ev.TopologyBuilt) -> StoryItem:
    routing = event.routing
    return f"swarm graph, round {event.round}", {
        "round": event.round, "strategy": event.strategy, "rerouted": event.rerouted,
        "edges": [{k: e.get(k) for k in ("src", "dst", "score")} for e in routing.get("edges", [])],
        "removed": [{k: e.get(k) for k in ("src", "dst", "score", "reason")} for e in routing.get("removed", [])],
        "order": list(routing.get("order", []))}


def _decision(event: ev.ManagerDecided) -> StoryItem:
    return f"swarm decision, round {event.round}", {
        "round": event.round, "terminate": event.terminate, "next_goal": event.next_goal,
        "final_answer": event.final_answer}


def _steering(event: ev.UserSteered) -> StoryItem:
    return "swarm steering", {"round": event.round, "action": event.action, "target": event.target,
                              "accepted": event.accepted, "reason": event.reason}


def _code_check(event: ev.TestRun) -> StoryItem:
    return f"swarm code check, round {event.round}", {"round": event.round, "outcome": event.outcome,
                                                       "passed": event.passed}


def _end(event: ev.RunFinished) -> StoryItem:
    return "swarm end", {"reason": str(event.reason), "detail": event.detail, "rounds": event.rounds,
                         "answer_source": event.answer_source}


# The events the transcript tells, by class (events are never subclassed: the class is the kind).
_STORY: dict[type[ev.Event], Callable[[Any], StoryItem]] = {
    ev.TopologyBuilt: _graph, ev.ManagerDecided: _decision, ev.UserSteered: _steering, ev.TestRun: _code_check,
    ev.RunFinished: _end,
}


def story_item(event: ev.Event) -> StoryItem | None:
    """The transcript's item for one event, or None for events inspect shows itself (model calls) or not at all."""
    tell = _STORY.get(type(event))
    return tell(event) if tell is not None else None


def story_summary(items: list[StoryItem]) -> dict[str, list[dict[str, Any]]]:
    """The sample metadata's lists: graphs, decisions and steering actions, in order."""
    kinds = {"graphs": "swarm graph", "decisions": "swarm decision", "steering": "swarm steering"}
    return {key: [data for source, data in items if source.startswith(prefix)] for key, prefix in kinds.items()}
