"""Autosave: a run killed with SIGKILL mid-run leaves a loadable session with every completed round;
a disk that refuses writes never stops a run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.runtime import events as ev
from core.sessions.model import SessionFormatError
from core.sessions.store import SessionRecorder, list_sessions, load_session
from sessions import EXAMPLES_DIR
from tests.support.paths import ROOT


def _completed_rounds(directory: Path) -> tuple[Path | None, int]:
    for path in directory.glob("*.json"):
        try:
            return path, load_session(path).completed_rounds
        except SessionFormatError:
            return path, -1  # an atomic save never shows a partial file: fail loudly below
    return None, 0


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_sigkill_mid_run_leaves_a_loadable_session_with_every_completed_round(tmp_path: Path) -> None:
    # The demo script over real HTTP, paced (0.25 s per call) so the run is still going when we kill it.
    with ScriptedServer(demo_script, ServerBehaviour(latency=0.25)) as server:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "SWARM_TUI_SESSIONS_DIR": str(tmp_path)}
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "tui", "--headless", "--domain", "code",
                "--base-url", server.base_url, DEMO_PROBLEMS["code"],
            ],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 180  # a guard against hangs, not a speed assertion
            path, rounds = None, 0
            while time.monotonic() < deadline and proc.poll() is None:
                path, rounds = _completed_rounds(tmp_path)
                assert rounds >= 0, f"{path} was unreadable while the run was saving"
                if rounds >= 1:
                    break
                time.sleep(0.02)
            assert proc.poll() is None, f"the run ended before the test could kill it: {proc.stderr.read()!r}"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert path is not None
    session = load_session(path)
    assert session.outcome is None  # killed, not finished
    assert session.completed_rounds >= 1
    finished = [r for r in session.rounds if r.finished]
    assert [r.round for r in finished] == list(range(1, len(finished) + 1))
    for record in finished:
        assert record.decision is not None and record.outputs
    # A temp file cut off by the kill (if any) does not confuse a listing.
    listing = list_sessions(tmp_path)
    assert [s.path for s in listing] == [path] and not listing.errors
    # Its event log has no end line and its writer is gone: listed as interrupted, not in progress.
    assert listing[0].outcome == "interrupted" and listing[0].live == "interrupted"


def test_a_failing_disk_write_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the sessions directory should be")
    recorder = SessionRecorder(blocker / "sessions")
    source = load_session(EXAMPLES_DIR / "example-math.json")
    for event in source.replay_events():
        recorder(event)  # must not raise
    assert recorder.error is not None and "cannot save the session" in recorder.error
    assert "\n" not in recorder.error
    assert recorder.session == source  # everything was still recorded in memory
    # Once the disk is back, the next save succeeds with the whole run.
    blocker.unlink()
    assert recorder.save() and recorder.error is None
    assert recorder.path is not None and load_session(recorder.path) == source


def test_recorder_with_explicit_path_and_toml(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "run.toml"
    recorder = SessionRecorder(tmp_path / "unused", path=target)
    source = load_session(EXAMPLES_DIR / "example-code.json")
    saves_at: list[int] = []
    for event in source.replay_events():
        before = recorder.saves
        recorder(event)
        if recorder.saves != before:
            saves_at.append(len(recorder.session.events) if recorder.session else 0)
        if isinstance(event, ev.RoundFinished):
            # Right after a round's autosave the file holds that round, finished.
            assert load_session(target).completed_rounds == event.round
    assert recorder.path == target and not (tmp_path / "unused").exists()
    assert load_session(target) == source
    # Saved at the start, after the plan, after each round and at the end.
    assert len(saves_at) == 1 + 1 + len(source.rounds) + 1


def test_events_outside_the_run_are_not_recorded(tmp_path: Path) -> None:
    recorder = SessionRecorder(tmp_path)
    source = load_session(EXAMPLES_DIR / "example-math.json")
    recorder(ev.ControlChanged(round=0, status="paused", mode="step"))  # before RunStarted
    for event in source.replay_events():
        recorder(event)
    recorder(ev.ControlChanged(round=2, status="paused", mode="auto"))  # after RunFinished
    assert recorder.save() and recorder.error is None
    assert recorder.session == source and load_session(recorder.path) == source


def test_secrets_in_the_endpoint_url_are_never_recorded(tmp_path: Path) -> None:
    source = load_session(EXAMPLES_DIR / "example-math.json")
    recorder = SessionRecorder(tmp_path)
    for event in source.replay_events():
        if isinstance(event, ev.RunStarted):
            event.base_url = "https://alice:s3cret@gateway.example:8443/v1?api-key=sk-LEAK"
        recorder(event)
    assert recorder.path is not None
    text = recorder.path.read_text(encoding="utf-8")
    assert "s3cret" not in text and "sk-LEAK" not in text and "alice" not in text
    assert load_session(recorder.path).metadata.base_url == "https://gateway.example:8443/v1"
