"""Saved runs side by side: sessions, compare records and a benchmark's runs of one problem, each as a
column (its label, its recorded events, its summary row) for the compare screen in replay."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.compose.compare import RowTracker, verdict_for
from core.runtime import events as ev
from core.sessions.compare_record import (
    MAX_METHODS,
    CompareRecord,
    CompareRow,
    RowState,
    load_record,
    looks_like_record,
)
from core.sessions.model import Session, SessionFormatError
from core.sessions.store import load_session


@dataclass
class SavedRun:
    label: str  # the column's title: the method, made unique when two columns share one
    session: Session
    path: Path
    row: CompareRow
    events: list[ev.Event]  # the session's recorded events, rebuilt once (its column replays them)


class _EventClock:
    """RowTracker's clock for a recorded run: the time of the event being folded."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fold_events(label: str, events: Sequence[ev.Event]) -> RowTracker:
    """A recorded run's events folded into a summary row, the way a live run's are, its wall time from
    the events' own times."""
    clock = _EventClock()
    tracker = RowTracker(CompareRow(label), clock)
    for event in events:
        clock.now = event.ts
        tracker(event)
    return tracker


def saved_run(session: Session, path: Path, label: str = "") -> SavedRun:
    """A recorded run as a column: its events rebuilt once, and its summary row folded from them."""
    label = label or session.metadata.strategy
    events = session.replay_events()
    tracker = fold_events(label, events)
    row = tracker.row
    if session.outcome is None:
        row.state, row.reason = RowState.INCOMPLETE, "the run did not finish"
    row.session = str(path)
    row.verdict = verdict_for(tracker, session.domain, None)
    return SavedRun(label, session, path, row, events)


def load_saved(paths: Sequence[Path]) -> list[SavedRun]:
    """The runs of session files and compare records, in the order given (a record brings each of its
    methods' sessions). SessionFormatError with one line for a file that cannot be used."""
    runs: list[SavedRun] = []
    for path in paths:
        if looks_like_record(path):
            runs.extend(runs_of_record(load_record(path)))
        else:
            runs.append(saved_run(load_session(path), path))
    if not runs:
        raise SessionFormatError("nothing to compare: no session in the files given")
    if len(runs) > MAX_METHODS:
        raise SessionFormatError(f"{len(runs)} runs given: the compare screen shows at most {MAX_METHODS}")
    return unique_labels(runs)


def runs_of_record(record: CompareRecord) -> list[SavedRun]:
    """Each method of a compare record whose session can be read; the record's verdicts are kept (they
    were judged with the comparison's --expect)."""
    runs = []
    for saved in record.rows:
        path = record.session_path(saved)
        if path is None:
            continue  # a method that never started: nothing to show
        try:
            session = load_session(path)
        except SessionFormatError as exc:
            raise SessionFormatError(f"{record.path}: the session of {saved.method}: {exc}") from None
        run = saved_run(session, path, saved.method)
        run.row.verdict = saved.verdict
        runs.append(run)
    return runs


def unique_labels(runs: list[SavedRun]) -> list[SavedRun]:
    """Two runs of one method (two sessions of dytopo) get "dytopo", "dytopo #2"."""
    seen: dict[str, int] = {}
    for run in runs:
        n = seen.get(run.label, 0) + 1
        seen[run.label] = n
        if n > 1:
            run.label = f"{run.label} #{n}"
            run.row.method = run.label
    return runs


def record_of_runs(runs: Sequence[SavedRun]) -> CompareRecord:
    """A compare record in memory for saved runs opened side by side (exports need one)."""
    first = runs[0].session.metadata
    return CompareRecord(
        problem=first.problem, domain=first.domain, model=first.model, base_url=first.base_url, demo=first.demo,
        options={run.label: run.session.method_options for run in runs},
        rows=[run.row for run in runs], created=first.ts,
    )


def same_problem(runs: Sequence[SavedRun]) -> bool:
    return len({run.session.problem.strip() for run in runs}) == 1
