"""Following a run another process is writing: a headless demo run in a subprocess (real openai client
against the scripted server, paced so it takes a while), watched through its event log in the TUI,
from the session picker and from `swarm-tui attach`; a SIGKILL of the writer leaves a session that
loads with its completed rounds and a follower that says INTERRUPTED."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings
from core.sessions.eventlog import LOG_SUFFIX, EventLogReader, has_ended, read_header
from core.sessions.store import list_sessions, load_session
from tests.support.paths import ROOT
from tests.support.tui import app_for, form_app, wait_for
from tui.cli.attach import main as attach_main
from tui.cli.launch import OpenFollow
from tui.cli.sessions import format_table
from tui.screens.follow import FINISHED, FOLLOWING, INTERRUPTED, FollowScreen
from tui.screens.sessions import SessionPickerScreen
from tui.widgets.header import ParamsBar, RunHeader

HANG_GUARD = 180.0

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL, /proc")


@contextmanager
def writer(tmp_path: Path, **pace: float) -> Iterator[subprocess.Popen[bytes]]:
    """A headless demo run in another process, writing its session and event log into tmp_path."""
    with ScriptedServer(demo_script, ServerBehaviour(**pace)) as server:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "SWARM_TUI_SESSIONS_DIR": str(tmp_path),
               "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "tui", "--headless", "--domain", "code", "--base-url", server.base_url,
             DEMO_PROBLEMS["code"]],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)


def wait_for_log(directory: Path, proc: subprocess.Popen[bytes], predicate: Any) -> Path:
    """The run's event log once ``predicate(events so far)`` holds (polling; bounded)."""
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the writer ended before the test was ready"
        for log in directory.glob("*" + LOG_SUFFIX):
            if predicate(EventLogReader(log).read_all()):
                return log
        time.sleep(0.05)
    raise AssertionError("the writer never got that far")


def started_round(n: int) -> Any:
    return lambda events: any(isinstance(e, ev.RoundStarted) and e.round >= n for e in events)


def text_of(widget: Any) -> str:
    return str(widget.render())


async def test_the_picker_marks_a_run_in_progress_and_follows_it_live_until_it_becomes_a_replay(
    tmp_path: Path,
) -> None:
    with writer(tmp_path, latency=0.3, chunk_delay=0.01) as proc:
        log = wait_for_log(tmp_path, proc, started_round(1))
        header = read_header(log)
        assert header is not None and header["pid"] == proc.pid and header["session"]
        (running,) = list_sessions(tmp_path)
        assert running.outcome == "running" and running.live == "running"
        assert " running " in format_table([running])  # `swarm-tui sessions` marks it too

        app = form_app(Settings(sessions_dir=str(tmp_path)))
        async with app.run_test(size=(140, 44)) as pilot:
            app.open_session_picker()
            await wait_for(pilot, lambda: isinstance(app.screen, SessionPickerScreen) and app.screen.listing)
            picker = app.screen
            assert picker.listing.rows[0][0].path == running.path
            await pilot.press("enter")  # the newest row: the run in progress
            await wait_for(pilot, lambda: isinstance(app.screen, FollowScreen))
            screen: FollowScreen = app.screen
            assert screen.state == FOLLOWING and app.swarm_screen is screen
            assert "FOLLOWING LIVE" in text_of(screen.query_one(ParamsBar))
            assert "following live" in text_of(screen.query_one(RunHeader))

            rounds_seen: set[int] = set()
            streamed: list[str] = []
            graph_while_following = False

            def watch() -> bool:
                nonlocal graph_while_following
                model = screen.model
                if screen.state == FOLLOWING:
                    rounds_seen.add(model.current)
                    rv = model.round_view()
                    if rv is not None:
                        streamed.extend(a.text for a in rv.agents.values() if a.streaming and a.text)
                        graph_while_following |= rv.routing is not None
                return screen.state != FOLLOWING

            await wait_for(pilot, watch, timeout=HANG_GUARD)
            assert proc.wait(timeout=60) == 0
            assert screen.state == FINISHED
            # It went through the rounds as they were written (the first may be over when it opened).
            assert len(rounds_seen) >= 2 and max(rounds_seen) == 3, rounds_seen
            assert streamed, "token deltas reached the panes while the run was going"
            assert graph_while_following, "the graph appeared while following"
            # Now a normal replay of the saved session: no token deltas, the finished run at its end.
            assert screen.session is not None and screen.session.outcome.reason == "manager"
            assert not any(isinstance(e, ev.AgentDelta) for e in screen.events)
            assert screen.cursor == len(screen.events) and screen.model.finished is not None
            assert "FOLLOWING" not in text_of(screen.query_one(ParamsBar))
            assert "REPLAY" in text_of(screen.query_one(ParamsBar))
    assert has_ended(log) and list_sessions(tmp_path)[0].outcome == "manager"


async def test_a_killed_writer_leaves_a_loadable_session_and_the_follower_says_interrupted(tmp_path: Path) -> None:
    with writer(tmp_path, latency=0.25) as proc:
        log = wait_for_log(tmp_path, proc, started_round(1))
        app = app_for(OpenFollow(log, settings=Settings(sessions_dir=str(tmp_path))))
        async with app.run_test(size=(140, 44)) as pilot:
            screen = app.screen
            assert isinstance(screen, FollowScreen) and screen.state == FOLLOWING
            # Kill it once round 1 is saved and round 2 is under way (so a partial round is lost).
            await wait_for(pilot, lambda: screen.model.current >= 2, timeout=HANG_GUARD)
            assert proc.poll() is None, "the run ended before the test could kill it"
            os.kill(proc.pid, signal.SIGKILL)
            assert proc.wait(timeout=30) == -signal.SIGKILL
            await wait_for(pilot, lambda: screen.state != FOLLOWING, timeout=30)
            assert screen.state == INTERRUPTED
            assert "INTERRUPTED" in text_of(screen.query_one(ParamsBar))
            assert "interrupted" in text_of(screen.query_one(RunHeader))
            await wait_for(pilot, lambda: any("interrupted" in n.message for n in app._notifications))
            saved = screen.session
            assert saved is not None and saved.outcome is None and saved.completed_rounds >= 1
            assert screen.model.rounds[1].finished and screen.model.finished is None
    session_path = EventLogReader(log).session_path
    session = load_session(session_path)
    assert session.outcome is None and session.completed_rounds >= 1
    finished = [r for r in session.rounds if r.finished]
    assert [r.round for r in finished] == list(range(1, len(finished) + 1))
    (summary,) = list_sessions(tmp_path)
    assert summary.outcome == "interrupted" and summary.live == "interrupted"
    assert not has_ended(log)


def test_attach_with_an_unknown_task_id_lists_the_known_ones(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / ("run" + LOG_SUFFIX)).write_text(
        '{"type":"log_header","pid":1,"session":"run.json","task_id":"abc123def456","started":1}\n'
    )
    assert attach_main(["nope", "--dir", str(tmp_path), "--wait", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no run with task id 'nope'" in err[0] and "abc123def456" in err[0]
    assert attach_main(["missing/file.json"]) == 2
    assert "no such file" in capsys.readouterr().err
