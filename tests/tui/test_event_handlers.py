"""Every consumer of the event stream (the run model, the headless printer, a session's per-round view)
says what it does with each engine event type: a handler from its typed table, or an explicit "ignored".
A new event type that a consumer neither handles nor ignores fails here instead of being dropped without
a word (the TUI would show nothing of it, a replay would lose it)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import ClassVar

import pytest

from core.runtime import events as ev
from core.runtime.dispatch import EventTable
from core.sessions.model import FOLDS
from tests.support.events import core_event_types
from tui.cli.headless import PRINTS, ProgressPrinter
from tui.model import HANDLERS, RunModel

CONSUMERS = {
    "the TUI's run model (tui.model.HANDLERS)": HANDLERS,
    "the headless printer (tui.cli.headless.PRINTS)": PRINTS,
    "a session's rounds (core.sessions.model.FOLDS)": FOLDS,
}


def test_the_engine_has_event_types_to_check() -> None:
    names = {cls.type for cls in core_event_types()}
    assert {"run_started", "agent_finished", "notice", "run_finished"} <= names


@pytest.mark.parametrize("consumer", list(CONSUMERS))
def test_every_engine_event_type_is_handled_or_ignored(consumer: str) -> None:
    missing = CONSUMERS[consumer].unhandled(core_event_types())
    assert not missing, f"{consumer} has no handler for {missing}: add one with @table.on(...) or ignore() it"


@dataclass(kw_only=True)
class _Unheard(ev.Event):
    type: ClassVar[str] = "unheard"


def test_a_type_nobody_handles_is_reported() -> None:
    table: EventTable[object] = EventTable()
    assert table.unhandled([_Unheard, ev.Notice]) == ["notice", "unheard"]
    table.ignore(_Unheard)
    assert table.unhandled([_Unheard]) == []


def test_a_handler_is_registered_once() -> None:
    table: EventTable[object] = EventTable()
    table.on(ev.Notice)(lambda consumer, event: None)
    with pytest.raises(ValueError, match="already has a handler"):
        table.on(ev.Notice)(lambda consumer, event: None)


def test_the_tables_reach_the_consumers() -> None:
    """A notice and a finished run fold into the run model and print as lines, through the tables."""
    model = RunModel()
    notice = ev.Notice(round=0, severity=ev.Severity.WARNING, message="endpoint slow")
    model.apply(notice)
    assert model.notices == [notice]
    out = io.StringIO()
    printer = ProgressPrinter(out)
    printer(notice)
    printer(ev.MemoryTrimmed(round=1, agent="Solver", dropped=2, dropped_tokens=300))  # ignored: no line
    assert out.getvalue().count("\n") == 1 and "endpoint slow" in out.getvalue()
