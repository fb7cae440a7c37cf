"""A benchmark's runs of one problem, one column per method, for ``swarm-tui compare --bench DIR TASK_ID``:
a person who sees that method A failed problem 17 and B passed it opens both runs side by side."""

from __future__ import annotations

from pathlib import Path

from core.bench.report import ReportError, load_folder
from core.bench.runner import Row
from core.compose.compare_saved import SavedRun, saved_run, unique_labels
from core.sessions.compare_record import MAX_METHODS
from core.sessions.model import SessionFormatError
from core.sessions.store import load_session


def bench_verdict(row: Row) -> str:
    """The benchmark's own verdict on the run (its dataset's scoring), as the compare columns say it."""
    word = "passed" if row.correct else "failed"
    if not row.detail or row.detail.lower().startswith(word):
        return row.detail or word  # e.g. "PASSED (1/1 tests passed)" says it already
    return f"{word}: {row.detail}"


def bench_runs(folder: Path, task_id: str, repeat: int = 0) -> list[SavedRun]:
    """Every method's run of ``task_id`` (the given repeat) in a benchmark folder, in the order the
    benchmark ran them. SessionFormatError with one line when there is nothing to open."""
    folder = Path(folder)
    try:
        bench = load_folder(folder)
    except ReportError as exc:
        raise SessionFormatError(f"not a benchmark folder: {exc}") from None
    rows = [r for r in bench.rows if r.task_id == task_id and r.repeat == repeat]
    if not rows:
        known = sorted({r.task_id for r in bench.rows})
        hint = ", ".join(known[:6]) + (" …" if len(known) > 6 else "")
        raise SessionFormatError(f"no run of problem {task_id!r} in {folder} (its problems: {hint or 'none'})")
    order = [str(s) for s in bench.meta.get("strategies") or []]
    rows.sort(key=lambda r: order.index(r.strategy) if r.strategy in order else len(order))  # the bench's order
    latest: dict[str, Row] = {}
    for row in rows:
        latest[row.strategy] = row  # a pair recorded twice: the later row wins, as in the report
    runs: list[SavedRun] = []
    for row in list(latest.values())[:MAX_METHODS]:
        if not row.session:
            continue
        path = (folder / row.session).resolve()
        if not path.is_relative_to(folder.resolve()):
            raise SessionFormatError(f"the session of {row.strategy} lies outside {folder}: {row.session}")
        try:
            session = load_session(path)
        except SessionFormatError as exc:
            raise SessionFormatError(f"the session of {row.strategy} for {task_id}: {exc}") from None
        run = saved_run(session, path, row.strategy)
        run.row.verdict = bench_verdict(row)
        run.row.wall_s = row.wall_s  # measured by the benchmark around the whole run
        runs.append(run)
    if not runs:
        raise SessionFormatError(f"the runs of {task_id!r} in {folder} kept no session")
    return unique_labels(runs)
