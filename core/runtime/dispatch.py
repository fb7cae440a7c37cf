"""A consumer's table of event handlers: each event class mapped to the method that takes it.

A consumer of the one event stream (the TUI's run model, the headless printer, a compare row, an MCP
task) registers a handler per event class with ``@table.on(EventClass)`` and names the classes it means
to skip with ``ignore``. The type checker sees that each handler takes the class it is registered for,
and ``unhandled()`` lists the engine's event types a consumer has neither handled nor ignored, so a new
event type that nobody folds in is a test failure instead of an event dropped without a word.

Code that only picks events out of a list (a replay's round starts, a session without its token deltas)
uses ``of_kind``, ``positions`` and ``without_deltas`` instead of a type test of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeGuard, TypeVar, cast

from core.runtime import events as ev

C = TypeVar("C")  # the consumer
E = TypeVar("E", bound=ev.Event)

Handler = Callable[[C, E], None]


class EventTable(Generic[C]):
    def __init__(self) -> None:
        self._handlers: dict[type[ev.Event], Callable[[C, Any], None]] = {}
        self._ignored: set[type[ev.Event]] = set()

    def on(self, cls: type[E]) -> Callable[[Handler[C, E]], Handler[C, E]]:
        """Register the decorated method as the handler of ``cls`` (one handler per class)."""

        def register(handler: Handler[C, E]) -> Handler[C, E]:
            if cls in self._handlers:
                raise ValueError(f"{cls.__name__} already has a handler")
            self._handlers[cls] = handler
            return handler

        return register

    def ignore(self, *classes: type[ev.Event]) -> None:
        """Event classes this consumer deliberately does nothing with."""
        self._ignored.update(classes)

    def dispatch(self, consumer: C, event: ev.Event) -> bool:
        """Run the handler of the event's class; False when it has none (ignored, or a method's own)."""
        handler = self._handlers.get(type(event))
        if handler is None:
            return False
        handler(consumer, event)
        return True

    def unhandled(self, classes: Iterable[type[ev.Event]]) -> list[str]:
        """The type names of ``classes`` this table neither handles nor ignores."""
        return sorted(c.type for c in classes if c not in self._handlers and c not in self._ignored)


def of_kind(events: Iterable[ev.Event], *kinds: type[E]) -> list[E]:
    """The events of the given classes, in order (events are never subclassed: the class is the kind)."""
    return [cast(E, e) for e in events if type(e) in kinds]


def positions(events: Iterable[ev.Event], *kinds: type[ev.Event]) -> list[int]:
    """Where the events of the given classes sit in ``events``."""
    return [i for i, e in enumerate(events) if type(e) in kinds]


def is_delta(event: ev.Event) -> TypeGuard[ev.AgentDelta]:
    """A streamed token delta: the one high-frequency event, which most folds and records skip."""
    return type(event) is ev.AgentDelta


def is_warning(event: ev.Event) -> TypeGuard[ev.Notice]:
    """A notice the user should hear of (a warning or an error, not an info line): what a training loop's
    progress passes on from its runs."""
    return type(event) is ev.Notice and event.severity != ev.Severity.INFO


def without_deltas(events: Iterable[ev.Event]) -> list[ev.Event]:
    """The events a session keeps: everything but the streamed token deltas."""
    return [e for e in events if type(e) is not ev.AgentDelta]
