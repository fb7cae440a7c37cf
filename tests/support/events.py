"""The engine's own event types, which every consumer's table must handle or ignore."""

from __future__ import annotations

from core.runtime import events as ev


def core_event_types() -> list[type[ev.Event]]:
    """The engine's own event types (a method's own types live in its module and print themselves)."""
    return [cls for cls in ev.event_types().values() if cls.__module__ == ev.__name__]
