"""swarm-tui compare: several methods on one problem over the loopback scripted server — the headless JSON
contract, one method failing while the others go on, saved records that reopen, bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from core.compose.compare import percent_change, summary_rows
from core.compose.compare_export import to_csv, to_markdown
from core.compose.compare_saved import load_saved
from core.demo.server import FaultRule
from core.sessions.compare_record import CompareRow, list_records, load_record
from core.sessions.model import SessionFormatError
from core.sessions.store import list_sessions, load_session
from tests.support.cli import swarm


def _lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_headless_json_contract(tmp_path: Path) -> None:
    result = swarm(
        "compare", "--demo", "--headless", "--json", "--domain", "math", "--strategy", "dytopo,dmoa,topoweaver",
        env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)}, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = _lines(result.stdout)
    *events, summary = lines
    assert summary["type"] == "compare_summary"
    assert sum(line["type"] == "compare_summary" for line in lines) == 1
    assert all(e.get("method") in ("dytopo", "dmoa", "topoweaver") for e in events)
    rows = {row["method"]: row for row in summary["rows"]}
    assert list(rows) == ["dytopo", "dmoa", "topoweaver"]
    finished = Counter(e["method"] for e in events if e["type"] == "agent_finished")
    for method, row in rows.items():
        assert set(row) >= {"method", "answer", "verdict", "calls", "prompt_tokens", "completion_tokens", "wall_s",
                            "session"}
        assert row["calls"] == finished[method] > 0
        end = [e for e in events if e["method"] == method and e["type"] == "run_finished"]
        assert len(end) == 1
        assert (row["prompt_tokens"], row["completion_tokens"]) == (end[0]["prompt_tokens"],
                                                                     end[0]["completion_tokens"])
        assert row["answer"] == end[0]["final_answer"]
    # Each method's run is an ordinary session that opens alone; the record names them.
    record = load_record(Path(summary["record"]))
    assert [r.method for r in record.rows] == ["dytopo", "dmoa", "topoweaver"]
    for row in record.rows:
        path = record.session_path(row)
        assert path is not None and path.is_file()
        assert load_session(path).metadata.strategy == row.method
    assert record.demo and record.model == "scripted-demo"


def test_one_method_failing_ends_its_own_row(tmp_path: Path, demo_server) -> None:  # type: ignore[no-untyped-def]
    demo_server.add_fault(FaultRule("http_401", call="tw-orchestrate", times=0))  # the key refused for TopoWeaver
    result = swarm(
        "compare", "--headless", "--json", "--domain", "math", "--strategy", "dytopo,topoweaver",
        "--base-url", demo_server.base_url, "What is 17*23?",
        env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path), "OPENAI_API_KEY": "sk-test"}, cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "1 of 2 methods failed: topoweaver" in result.stderr
    rows = {row["method"]: row for row in _lines(result.stdout)[-1]["rows"]}
    assert rows["topoweaver"]["state"] == "failed" and rows["topoweaver"]["reason"]
    assert rows["topoweaver"]["verdict"] == "failed"
    assert rows["dytopo"]["state"] == "done" and rows["dytopo"]["calls"] > 0
    # Both runs were saved, the failed one included.
    record = load_record(Path(_lines(result.stdout)[-1]["record"]))
    for row in record.rows:
        assert record.session_path(row) is not None and record.session_path(row).is_file()  # type: ignore[union-attr]


def test_summary_table_on_stdout_progress_tagged_on_stderr(tmp_path: Path) -> None:
    result = swarm(
        "compare", "--demo", "--headless", "--domain", "math", "--strategy", "single,dytopo", "--parallel", "1",
        "--expect", "14/3", env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)}, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    table = result.stdout.splitlines()
    assert table[0].split()[:3] == ["method", "answer", "verdict"]
    assert table[2].startswith("single") and table[3].startswith("dytopo")
    assert "±0%" in table[2]  # the first column is the base of the differences
    assert "[dytopo] " in result.stderr and "[single] " in result.stderr
    assert "matches expected" in result.stdout


def test_saved_record_reopens_and_is_listed(tmp_path: Path) -> None:
    result = swarm(
        "compare", "--demo", "--headless", "--json", "--domain", "general", "--strategy", "dytopo,single",
        env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)}, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    record_path = Path(_lines(result.stdout)[-1]["record"])
    runs = load_saved([record_path])
    assert [run.label for run in runs] == ["dytopo", "single"]
    assert all(run.row.calls > 0 and run.row.state == "done" for run in runs)
    # A session given twice gets a column each, told apart.
    again = load_saved([runs[0].path, runs[0].path])
    assert [run.label for run in again] == ["dytopo", "dytopo #2"]
    # The session list shows the comparison as such, not its record as a broken session.
    found, errors = list_records(tmp_path)
    assert [s.methods for s in found] == [["dytopo", "single"]] and not errors
    assert not list_sessions(tmp_path).errors
    listed = swarm("sessions", env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)}, cwd=tmp_path)
    assert listed.returncode == 0 and "compare: dytopo, single" in listed.stdout


def test_hostile_record_cannot_point_outside_its_folder(tmp_path: Path) -> None:
    record = {
        "format": "swarm-tui-compare", "version": 1, "problem": "x", "domain": "math", "model": "m",
        "base_url": "u", "demo": False, "methods": ["dytopo"],
        "rows": [{"method": "dytopo", "session": "../../etc/passwd"}],
    }
    path = tmp_path / "evil.compare.json"
    path.write_text(json.dumps(record))
    with pytest.raises(SessionFormatError, match="outside the record's folder"):
        load_record(path)
    result = swarm("compare", str(path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["compare", "--demo", "--headless", "x"], "name the methods"),
        (["compare", "--demo", "--headless", "--strategy", "dytopo", "x"], "two methods or more"),
        (["compare", "--demo", "--headless", "--strategy", "dytopo,nosuch", "x"], "unknown strategy nosuch"),
        (["compare", "--demo", "--headless", "--strategy", "dytopo,dmoa", "-o", "topoweaver.turns=3", "x"],
         "topoweaver is not among"),
        (["compare", "--demo", "--headless", "--strategy", "dytopo,dmoa", "-o", "dmoa.k=zero", "x"], "dmoa"),
        (["compare", "--demo", "--strategy", "dytopo,dmoa", "--json", "x"], "--json goes with --headless"),
        (["compare", "--demo", "--strategy", "dytopo,dmoa", "--parallel", "0", "x"], "parallel"),
        (["compare", "--bench", "/no/such/dir", "17"], "not a benchmark folder"),
        (["compare", "missing.json"], "missing.json: no such file"),  # worded as replay words it
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], fragment: str, tmp_path: Path) -> None:
    result = swarm(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr


def test_percent_differences_to_the_first_column() -> None:
    assert percent_change(150, 100) == "+50%"
    assert percent_change(60, 100) == "-40%"
    assert percent_change(100.2, 100) == "±0%"
    assert percent_change(5, 0) == "—"
    rows = [CompareRow("a", prompt_tokens=80, completion_tokens=20, wall_s=2.0),
            CompareRow("b", prompt_tokens=150, completion_tokens=50, wall_s=1.0)]
    summary = summary_rows(rows)
    assert [r["total_tokens"] for r in summary] == [100, 200]
    assert [r["tokens_vs_first"] for r in summary] == ["±0%", "+100%"]
    assert [r["wall_vs_first"] for r in summary] == ["±0%", "-50%"]


def test_a_demo_never_presents_its_own_problem_as_the_answer_to_yours(tmp_path: Path) -> None:
    result = swarm(
        "compare", "--demo", "--headless", "--json", "--domain", "math", "--strategy", "dytopo,dmoa",
        "--expect", "391", "What is 17*23?", env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)}, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    *events, summary = _lines(result.stdout)
    starts = [e for e in events if e["type"] == "run_started"]
    assert len(starts) == 2 and all(e["demo_played"] for e in starts)
    for row in summary["rows"]:
        # Neither "matches" nor "does not match": the scripted server did not play 17*23.
        assert row["verdict"].startswith("no verdict: the demo played "), row
    assert "plays its own problem" in result.stderr
    # The demo's own problem: the verdict is about it.
    own = swarm(
        "compare", "--demo", "--headless", "--json", "--domain", "math", "--strategy", "dytopo,dmoa",
        "--expect", "14/3", env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)}, cwd=tmp_path,
    )
    assert own.returncode == 0, own.stderr
    assert [r["verdict"] for r in _lines(own.stdout)[-1]["rows"]] == ["matches expected", "matches expected"]


def test_tokens_of_calls_cut_off_by_the_time_budget_are_counted_and_marked(  # type: ignore[no-untyped-def]
    tmp_path: Path, demo_server
) -> None:
    demo_server.add_fault(FaultRule("stall", call="work", times=0))  # one piece of every reply, then silence
    result = swarm(
        "compare", "--headless", "--domain", "math", "--strategy", "dytopo,single", "--time-budget", "1",
        "--base-url", demo_server.base_url, "What is 17*23?",
        env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path), "OPENAI_API_KEY": "sk-test"}, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    table = result.stdout.splitlines()
    dytopo = next(line for line in table if line.startswith("dytopo"))
    assert "~" in dytopo
    assert table[-1].startswith("~ tokens include estimates (dytopo ") and "cut off in flight" in table[-1]
    (record_path,) = tmp_path.glob("*.compare.json")
    record = load_record(record_path)
    row = record.rows[0]
    assert row.method == "dytopo" and row.reason == "budget" and 0 < row.tokens_estimated < row.total_tokens
    session = load_session(record.session_path(row))  # type: ignore[arg-type]
    assert session.outcome is not None and session.tokens == row.total_tokens
    cut_off = [n for r in session.rounds for n in r.notices if "cut off in flight" in n.message]
    assert cut_off  # the session says which calls were cut off and what they were counted as
    markdown = to_markdown(record)
    assert f"~{row.total_tokens}" in markdown and "~ tokens include estimates" in markdown
    assert "tokens_estimated" in to_csv(record).splitlines()[0]


def test_a_stepped_method_s_wall_time_leaves_out_its_pauses(tmp_path: Path) -> None:
    """The compare row's wall_s is the time a method worked; the time it sat paused waiting for a key is its
    paused_s (the column shows both). A given clock: the figures are exact, no sleeping."""
    from core.compose.compare import RowTracker
    from core.runtime import events as ev
    from core.runtime.control import ControlMode, ControlStatus

    now = [100.0]
    tracker = RowTracker(CompareRow("dytopo"), clock=lambda: now[0])
    started = ev.RunStarted(run_id="r", problem="p", domain="math", manager="Manager", workers=["A", "B"], roles={},
                            protocol="phased", strategy="dytopo", model="m", base_url="u", demo=True,
                            params={"tau": 0.3, "k_in": 1, "max_rounds": 2})
    tracker(started)
    pauses = ((101.0, ControlStatus.PAUSED), (131.0, ControlStatus.STEPPING),
              (133.0, ControlStatus.PAUSED), (143.0, ControlStatus.STEPPING))
    for at, status in pauses:
        now[0] = at
        tracker(ev.ControlChanged(round=1, status=status, mode=ControlMode.STEP))
    now[0] = 145.0
    tracker(ev.RoundFinished(round=1, prompt_tokens=10, completion_tokens=5))
    assert tracker.row.paused_s == 40.0
    assert tracker.row.wall_s == 5.0  # 45 s since the start, 40 of them paused
    restored = load_record_row(tracker.row, tmp_path)
    assert restored.paused_s == 40.0 and restored.wall_s == 5.0


def load_record_row(row: CompareRow, folder: Path) -> CompareRow:
    """A row through a saved record and back."""
    from core.sessions.compare_record import CompareRecord, save_record

    record = CompareRecord(problem="p", domain="math", model="m", base_url="u", demo=True, rows=[row])
    return load_record(save_record(record, folder / "r.compare.json")).rows[0]
