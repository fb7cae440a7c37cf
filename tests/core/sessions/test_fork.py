"""Fork: continue a recorded run live from one of its rounds, with the memory it had."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core.compose.plan import BackendChoice, RunPlan
from core.compose.runner import build_engine, open_backend
from core.demo.scripts import DEMO_PROBLEMS
from core.demo.server import ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings
from core.sessions.fork import fork_point, with_recorded_method
from core.sessions.model import Session, session_from_events
from core.sessions.store import load_session
from sessions import EXAMPLES_DIR
from tests.support.engine import of
from tests.support.paths import ROOT


async def _run(server: ScriptedServer, settings: Settings, **kwargs: Any) -> list[ev.Event]:
    backend = await open_backend(settings, BackendChoice(server=server))
    events: list[ev.Event] = []
    engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [events.append], **kwargs)
    await engine.run()
    await backend.close()
    return events


def _prompt(server: ScriptedServer, role: str, round_no: int, call: str) -> list[dict[str, Any]]:
    """The whole request: each agent's conversation up to this call (issue 46), or its one prompt."""
    (request,) = [r for r in server.requests if r.role == role and r.round == round_no and r.call == call]
    return request.messages


@pytest.mark.parametrize(("protocol", "strategy"),
                         [("phased", "dytopo"), ("single-pass", "dytopo"), ("phased", "chain")])
async def test_fork_rebuilds_memory_exactly_as_the_live_run_had_it(embedder: Any, protocol: str, strategy: str) -> None:
    settings = Settings(protocol=protocol, strategy=strategy)
    with ScriptedServer() as original_server:
        original = await _run(original_server, settings)
    parent = session_from_events(original)
    point = fork_point(parent, 2, "parent.json")
    with ScriptedServer() as fork_server:
        forked = await _run(fork_server, settings, fork=point)

    started = forked[0]
    assert isinstance(started, ev.RunStarted) and started.parent == {"session": "parent.json", "round": 2}
    # The parent's rounds are re-emitted, then round 3 runs live: no model call for rounds 1 and 2.
    assert {r.round for r in fork_server.requests} == {3}
    assert [e.round for e in of(forked, ev.RoundFinished)] == [1, 2, 3]
    # Same memory, same conversations: the forked round 3 sends exactly what the original round 3 sent.
    call = ev.CallKind.DESCRIPTORS if protocol == "phased" else ev.CallKind.SINGLE_PASS
    for role in ("Developer", "Researcher", "Tester", "Designer"):
        assert _prompt(fork_server, role, 3, call) == _prompt(original_server, role, 3, call), role
    manager = _prompt(fork_server, "Manager", 3, ev.CallKind.MANAGER)
    assert manager == _prompt(original_server, "Manager", 3, ev.CallKind.MANAGER)
    assert len(manager) == 4  # the system prompt, the plan and its reply, then round 3's review (a side request)
    assert forked[-1].reason == "manager" and "def make_palindrome" in forked[-1].final_answer


async def test_fork_from_the_last_allowed_round_runs_no_further_round(embedder: Any) -> None:
    with ScriptedServer() as original_server:
        original = await _run(original_server, Settings())
    point = fork_point(session_from_events(original), 2, "parent.json")
    with ScriptedServer() as fork_server:
        forked = await _run(fork_server, Settings(max_rounds=2), fork=point)
    assert fork_server.requests == []  # max_rounds is a limit, even for a fork
    finished = forked[-1]
    assert isinstance(finished, ev.RunFinished) and finished.reason == "max_rounds" and finished.rounds == 2
    assert not of(forked, ev.RoundStarted, round=3)


def test_fork_from_a_round_that_did_not_happen_is_a_clear_error(tmp_path: Path) -> None:
    session = load_session(ROOT / "sessions" / "example-code.json")
    with pytest.raises(ValueError, match="cannot fork from round 9"):
        fork_point(session, 9, "x")


def test_cli_fork_saves_a_session_that_names_its_parent(tmp_path: Path) -> None:
    out = tmp_path / "fork.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui",
            "replay",
            "example-code",
            "--fork",
            "1",
            "--headless",
            "--demo",
            "--save",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "SWARM_TUI_SESSIONS_DIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    session = load_session(out)
    assert session.parent is not None and session.parent["round"] == 1
    assert session.parent["session"].endswith("example-code.json")
    assert session.completed_rounds >= 2


def _recorded_with(options: dict[str, Any]) -> Session:
    """The shipped DyTopo example, as if its run had recorded ``options``."""
    events = load_session(EXAMPLES_DIR / "example-code.json").replay_events()
    return session_from_events([replace(e, method_options=options) if isinstance(e, ev.RunStarted) else e
                                for e in events])


def test_a_fork_runs_the_recorded_method_with_the_options_it_still_has() -> None:
    """The replay screen's fork and the CLI's (tui.cli.options) share core.sessions.fork.with_recorded_method:
    the fork runs the parent's method with its options, whatever the app's own strategy; an option this version
    no longer has or allows is left out, and another method asked for gets none of the parent's."""
    session = _recorded_with({"memory": "latest", "an_option_since_removed": 1, "payload": "a value never allowed"})
    settings = with_recorded_method(Settings(strategy="dmoa"), session)
    assert settings.strategy == "dytopo" and settings.strategy_options["dytopo"] == {"memory": "latest"}
    assert RunPlan.make(settings).method.options["memory"] == "latest"  # type: ignore[attr-defined]
    other = with_recorded_method(Settings(), session, "random")
    assert other.strategy == "random" and "random" not in other.strategy_options
    assert with_recorded_method(Settings(), _recorded_with({})).strategy_options == {}  # an old session
