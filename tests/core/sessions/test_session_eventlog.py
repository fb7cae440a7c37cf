"""The event log beside a session (core.sessions.eventlog): what the recorder writes, reading it by
offset while it grows, and how a listing tells a run in progress from an interrupted one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from core.runtime import events as ev
from core.sessions.eventlog import (
    END_TYPE,
    LOG_SUFFIX,
    EventLogReader,
    find_task,
    has_ended,
    live_state,
    log_path_for,
    logged_runs,
    read_header,
)
from core.sessions.store import SessionRecorder, list_sessions, load_session
from tests.support.tui import pinned_demo_events


def demo_events() -> list[ev.Event]:
    return list(pinned_demo_events())


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_recorder_writes_every_event_with_a_header_and_an_end_line(tmp_path: Path, embedder: object) -> None:
    events = demo_events()
    recorder = SessionRecorder(tmp_path, log_header={"task_id": "abc123"})
    for event in events:
        recorder(event)
    assert recorder.path is not None and recorder.log_error is None
    log = log_path_for(recorder.path)
    assert log == recorder.path.with_name(recorder.path.stem + LOG_SUFFIX) and log.is_file()
    lines = lines_of(log)
    header, end = lines[0], lines[-1]
    assert header["type"] == "log_header" and header["pid"] == os.getpid() and header["task_id"] == "abc123"
    assert header["session"] == recorder.path.name
    assert end["type"] == END_TYPE and end["reason"] == "run_finished"
    assert lines[-2]["type"] == "run_finished" and has_ended(log) and live_state(recorder.path) == ""

    reader = EventLogReader(log)
    logged = reader.read_all()
    assert reader.ended and reader.header == header and reader.session_path == recorder.path
    recorded = [e for e in events if not isinstance(e, ev.AgentDelta)]
    assert [e for e in logged if not isinstance(e, ev.AgentDelta)] == recorded
    # Token deltas are all there, merged per call: the same text in fewer lines.
    def streamed(stream: list[ev.Event]) -> dict[tuple[int, str, str], str]:
        out: dict[tuple[int, str, str], str] = {}
        for e in stream:
            if isinstance(e, ev.AgentDelta):
                key = (e.round, e.agent, e.call)
                out[key] = out.get(key, "") + e.text
        return out

    assert streamed(logged) == streamed(events)
    assert sum(isinstance(e, ev.AgentDelta) for e in logged) <= sum(isinstance(e, ev.AgentDelta) for e in events)
    # The session file is the usual one and the listing shows the finished run.
    assert load_session(recorder.path).outcome.reason == "manager"
    (summary,) = list_sessions(tmp_path)
    assert summary.outcome == "manager" and summary.live == ""
    assert find_task(tmp_path, "abc123").session == recorder.path and find_task(tmp_path, "other") is None


def test_a_follower_reads_only_what_was_appended(tmp_path: Path, embedder: object) -> None:
    events = [e for e in demo_events() if not isinstance(e, ev.AgentDelta)]
    recorder = SessionRecorder(tmp_path, path=tmp_path / "run.json")
    half = len(events) // 2
    for event in events[:half]:
        recorder(event)
    log = tmp_path / ("run" + LOG_SUFFIX)
    reader = EventLogReader(log)
    first = reader.read_new()
    assert first == events[:half] and reader.offset == log.stat().st_size and not reader.ended
    assert reader.read_new() == []  # nothing new: nothing read again
    # In progress: its writer (this process) is alive and the log has no end line.
    assert live_state(recorder.path) == "running"
    (summary,) = list_sessions(tmp_path)
    assert summary.outcome == "running" and summary.live == "running"

    recorder(events[half])
    offset = reader.offset
    assert reader.read_new() == [events[half]] and reader.offset > offset
    # A line still being written waits for its newline.
    with open(log, "a", encoding="utf-8") as handle:
        line = json.dumps(events[half + 1].to_dict())
        handle.write(line[:20])
        handle.flush()
        assert reader.read_new() == []
        handle.write(line[20:] + "\n")
    assert reader.read_new() == [events[half + 1]]


def test_a_log_whose_writer_is_gone_is_interrupted(tmp_path: Path, embedder: object) -> None:
    events = [e for e in demo_events() if not isinstance(e, ev.AgentDelta)]
    recorder = SessionRecorder(tmp_path, path=tmp_path / "run.json")
    for event in events[:-1]:  # everything but run_finished
        recorder(event)
    log = log_path_for(recorder.path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lines = log.read_text().splitlines()

    def with_header(**changes: object) -> None:
        header = {**json.loads(lines[0]), **changes}
        log.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")

    with_header(pid=int(dead.stdout))
    assert live_state(recorder.path) == "interrupted"
    assert list_sessions(tmp_path)[0].outcome == "interrupted"
    with_header(pid_start=(read_header(log) or {}).get("pid_start", 0) + 12345, pid=os.getpid())
    assert live_state(recorder.path) == "interrupted"  # this pid now belongs to another process
    with_header()  # the header as written: this process, alive
    assert live_state(recorder.path) == "running"
    # The session still loads with every completed round.
    assert load_session(recorder.path).completed_rounds == 3


def test_close_ends_a_log_without_a_finished_run_and_a_log_that_cannot_be_written_stops_only_itself(
    tmp_path: Path, embedder: object
) -> None:
    events = [e for e in demo_events() if not isinstance(e, ev.AgentDelta)]
    recorder = SessionRecorder(tmp_path, path=tmp_path / "a.json", log_header={"task_id": "t1"})
    for event in events[:5]:
        recorder(event)
    recorder.close("failed")
    recorder.close("again")  # idempotent
    lines = lines_of(tmp_path / ("a" + LOG_SUFFIX))
    assert lines[-1]["type"] == END_TYPE and lines[-1]["reason"] == "failed"
    assert sum(line["type"] == END_TYPE for line in lines) == 1
    assert live_state(tmp_path / "a.json") == ""

    (tmp_path / ("b" + LOG_SUFFIX)).mkdir()  # the log's name is taken by a folder
    blocked = SessionRecorder(tmp_path, path=tmp_path / "b.json")
    for event in events:
        blocked(event)
    assert blocked.log is None and blocked.log_error and "event log" in blocked.log_error
    assert blocked.error is None and load_session(tmp_path / "b.json").outcome is not None
    assert [run.task_id for run in logged_runs(tmp_path)] == ["t1"]


def test_the_recorder_can_run_without_a_log(tmp_path: Path, embedder: object) -> None:
    recorder = SessionRecorder(tmp_path, event_log=False)
    for event in demo_events():
        recorder(event)
    assert recorder.path is not None and recorder.path.is_file()
    assert not list(tmp_path.glob("*" + LOG_SUFFIX))
