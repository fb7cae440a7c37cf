"""Saved sessions in the TUI: the open-session picker, export from the command palette (replay and
live), and fork from a replay round against the demo server (real openai client, real MiniLM)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from core.methods.catalogue import unit_count
from core.runtime import events as ev
from core.sessions.export import FORMATS, export_session
from core.sessions.model import session_from_events
from core.sessions.store import list_sessions, load_session, save_session
from sessions import EXAMPLES_DIR
from tests.support.tui import live_app, pinned_demo_events, wait_for
from tests.support.tui_sessions import EXAMPLE, launch_app, picker_rows, replay_app, run_palette_command
from tui.app import SwarmApp
from tui.cli.sessions import format_table
from tui.export import EXPORT_NAMES, export_path
from tui.screens.launch import LaunchScreen
from tui.screens.replay import ReplayScreen
from tui.screens.run import RunScreen
from tui.screens.sessions import SessionPickerScreen
from tui.widgets.header import ParamsBar, RunHeader


def messages(app: SwarmApp) -> list[str]:
    return [n.message for n in app._notifications]


# --- the picker ---------------------------------------------------------------------------------


async def test_picker_lists_saved_sessions_and_examples_and_opens_one(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE, tmp_path / "saved-run.json")
    (tmp_path / "broken.json").write_text('{"schema_version": 1, "events": [', encoding="utf-8")
    app = launch_app(tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:  # wide enough for the CLI's 48-cell problem column
        assert isinstance(app.screen, LaunchScreen)
        await pilot.press("ctrl+l")
        rows = await picker_rows(app, pilot)
        examples = list_sessions(EXAMPLES_DIR)
        assert len(rows) == 1 + len(examples)
        saved = list_sessions(tmp_path)[0]
        assert rows[0] == (saved.created, "[demo] " + saved.problem[:40] + "…", "code", "dytopo", "3 rounds",
                           "manager", str(saved.tokens), "saved-run.json")
        cli_line = format_table([saved]).splitlines()[2]  # what `swarm-tui sessions` prints for it
        assert all(cell in cli_line for cell in rows[0])
        for row, summary in zip(rows[1:], examples, strict=True):
            assert row[0] == summary.created and row[2:7] == (
                summary.domain, summary.method, unit_count(summary.method, summary.rounds), summary.outcome,
                str(summary.tokens))
            assert row[7] == f"example: {summary.path.name}"
        # The unreadable file: one notification line naming it, and the count under the table.
        assert any(m.startswith("skipped ") and "broken.json" in m and "\n" not in m for m in messages(app))
        assert "1 unreadable file(s) skipped" in str(app.screen.query_one("#picker-status", Static).render())

        math_row = next(i for i, r in enumerate(rows) if r[7] == "example: example-math.json")
        app.screen.query_one(DataTable).move_cursor(row=math_row)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen))
        screen = app.screen
        assert screen.source == str(EXAMPLES_DIR / "example-math.json")
        assert screen.model.domain == "math" and screen.model.problem == load_session(
            EXAMPLES_DIR / "example-math.json").problem
        assert "REPLAY" in str(screen.query_one(ParamsBar).render())
        # esc goes back to the picker it was opened from, on the same row; enter opens it again;
        # "o" also goes back to that picker (no second picker on top).
        await pilot.press("escape")
        await picker_rows(app, pilot)
        picker = app.screen
        assert isinstance(picker, SessionPickerScreen) and picker.query_one(DataTable).cursor_row == math_row
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen))
        assert app.swarm_screen is app.screen and app.screen is not screen
        await pilot.press("o")
        await picker_rows(app, pilot)
        assert app.screen is picker
        await pilot.press("escape")
        assert isinstance(app.screen, LaunchScreen)


async def test_picker_is_in_the_command_palette(tmp_path: Path) -> None:
    app = launch_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"open a saved session")
        await pilot.pause(0.3)
        await pilot.press("enter")
        rows = await picker_rows(app, pilot)
        assert any(r[7] == "example: example-code.json" for r in rows)


async def test_picker_refuses_while_a_swarm_runs(tmp_path: Path) -> None:
    app = live_app(tmp_path, step=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen.model.control_status == "paused")
        await pilot.press("o")
        assert isinstance(app.screen, RunScreen)
        assert any("a swarm is running" in m for m in messages(app))


# --- export -------------------------------------------------------------------------------------


async def test_export_every_format_from_a_replay_writes_to_exports_by_the_session(tmp_path: Path) -> None:
    source = tmp_path / "run.json"
    shutil.copy(EXAMPLE, source)
    session = load_session(source)
    app = replay_app(source, tmp_path / "elsewhere")
    async with app.run_test(size=(120, 40)) as pilot:
        for fmt in FORMATS:
            await run_palette_command(app, f"Export session as {EXPORT_NAMES[fmt]}")
            await pilot.pause()
            target = export_path(source, fmt, tmp_path / "elsewhere")
            assert any(m == f"exported {EXPORT_NAMES[fmt]}: {target}" for m in messages(app))  # toasts are capped
        assert {p.name for p in tmp_path.iterdir()} == {"run.json", "exports"}  # never among the sessions
        exports = tmp_path / "exports"
        written = {p.name for p in exports.iterdir()}
        assert written == {"run.md", "run.json", "run.toml", "run.dot", "run.mmd", "run.html"}
        for fmt in FORMATS:
            target = export_path(source, fmt, tmp_path / "elsewhere")
            assert target.read_text(encoding="utf-8") == export_session(session, fmt)
        assert source.read_bytes() == EXAMPLE.read_bytes()  # the session file itself is untouched
        assert load_session(exports / "run.toml").events == session.events
        # Through the palette's own keys, too.
        (exports / "run.md").unlink()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"export session as markdown")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: (exports / "run.md").exists())


async def test_export_of_a_shipped_example_goes_to_the_sessions_dir(tmp_path: Path) -> None:
    app = replay_app(EXAMPLE, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_palette_command(app, "Export session as Mermaid")
        await pilot.pause()
    assert (tmp_path / "exports" / "example-code.mmd").read_text() == export_session(load_session(EXAMPLE), "mermaid")
    assert not (EXAMPLES_DIR / "example-code.mmd").exists()


async def test_export_from_a_live_run_uses_the_recorded_session(tmp_path: Path) -> None:
    app = live_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        recorder = app.swarm_screen.recorder
        await run_palette_command(app, "Export session as Markdown")
        await run_palette_command(app, "Export session as DOT")
        await pilot.pause()
        exported = recorder.path.parent / "exports" / recorder.path.name
        md = exported.with_suffix(".md")
        assert md.read_text() == export_session(recorder.session, "md")
        assert "## Round 3" in md.read_text() and "Final answer" in md.read_text()
        assert exported.with_suffix(".dot").read_text().startswith("digraph swarm {")


async def test_export_before_anything_is_saved_says_so(tmp_path: Path) -> None:
    from tests.support.tui import feed_app

    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await run_palette_command(app, "Export session as JSON")
        await pilot.pause()
        assert any("nothing to export yet" in m for m in messages(app))


# --- fork ---------------------------------------------------------------------------------------


async def test_fork_continues_live_from_the_viewed_round_and_records_its_parent(tmp_path: Path,
                                                                                embedder: object) -> None:
    source = tmp_path / "parent.json"
    shutil.copy(EXAMPLE, source)
    forks = tmp_path / "forks"
    app = replay_app(source, forks, demo=True, demo_chunk_delay=0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        replay.jump_to_round(1)
        await pilot.pause()
        assert replay.shown_round == 1
        await pilot.press("t")  # what-if tau 0.35: the fork continues with it
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        assert run.fork is not None and run.fork.round == 1
        await wait_for(pilot, lambda: run.model.finished is not None)
        model = run.model
        assert model.finished.reason == "manager"
        assert model.run.parent == {"session": str(source), "round": 1}
        assert model.rounds[2].params["tau"] == pytest.approx(0.35)  # the first live round
        assert "tau 0.35" in str(run.query_one(ParamsBar).render()).replace("\xa0", " ")
        assert model.rounds[1].goal  # the parent's round 1 is shown as history
        assert "fork of parent.json @ round 1" in str(run.query_one(RunHeader).render())
        await pilot.pause(0.1)
        saved = load_session(run.recorder.path)
    assert run.recorder.path.parent == forks
    assert saved.parent == {"session": str(source), "round": 1}
    parent = load_session(source)
    history = [e for e in saved.events if e.get("round", 0) == 1 and e["type"] != "control_changed"]
    recorded = [e for e in parent.events if e.get("round", 0) == 1 and e["type"] != "control_changed"]
    assert [(e["type"], e.get("agent")) for e in history] == [(e["type"], e.get("agent")) for e in recorded]
    assert saved.rounds[1].params["tau"] == pytest.approx(0.35) and saved.completed_rounds >= 2


async def test_a_fork_from_the_replay_runs_the_recorded_method_with_its_options(tmp_path: Path,
                                                                               embedder: object) -> None:
    """The app's own strategy (broadcast) is not the recorded run's: f forks DyTopo with memory=latest, as the
    parent ran (core.sessions.fork.with_recorded_method, which the CLI's fork uses too)."""
    events = [replace(e, method_options={"memory": "latest"}) if isinstance(e, ev.RunStarted) else e
              for e in load_session(EXAMPLE).replay_events()]
    source = tmp_path / "parent.json"
    save_session(session_from_events(events), source)
    app = replay_app(source, tmp_path / "forks", demo=True, demo_chunk_delay=0.0, settings={"strategy": "broadcast"})
    async with app.run_test(size=(120, 40)) as pilot:
        app.screen.jump_to_round(1)
        await pilot.pause()
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen
        await wait_for(pilot, lambda: run.model.finished is not None)
        assert run.model.run.strategy == "dytopo" and run.model.run.method_options["memory"] == "latest"


async def test_fork_from_an_unfinished_round_explains_and_stays_in_replay(tmp_path: Path,
                                                                          embedder: object) -> None:
    events = [e for e in pinned_demo_events() if not isinstance(e, ev.AgentDelta)]
    cut = next(i for i, e in enumerate(events) if isinstance(e, ev.RoundStarted) and e.round == 2) + 3
    path = tmp_path / "partial.json"
    save_session(session_from_events(events[:cut]), path)
    app = replay_app(path, tmp_path, demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("N", "N")  # into round 2, which never finished
        assert app.screen.shown_round == 2
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, ReplayScreen)
        assert any("cannot fork from round 2: the session has 1 completed round(s)" in m for m in messages(app))


async def test_fork_with_the_endpoint_down_notifies_and_stays_in_replay(tmp_path: Path) -> None:
    source = tmp_path / "parent.json"
    shutil.copy(EXAMPLE, source)
    app = replay_app(source, tmp_path, settings={"base_url": "http://127.0.0.1:9/v1", "max_retries": 0})
    async with app.run_test(size=(120, 40)) as pilot:
        replay = app.screen
        replay.jump_to_round(2)
        await pilot.pause()
        await pilot.press("f")
        await wait_for(pilot, lambda: any(m.startswith("cannot fork:") for m in messages(app)))
        await pilot.pause()
        assert app.screen is replay and app.swarm_screen is replay
        assert any("cannot reach the model endpoint" in m for m in messages(app))


def test_a_fork_says_where_it_continues_in_its_methods_words() -> None:
    from core.runtime.config import Settings
    from tui.app import fork_toast

    assert fork_toast(2, Settings(strategy="dytopo", tau=0.4, k_in=2)) == (
        "forking from round 2: continuing live with tau 0.40, k_in 2")
    dmoa = fork_toast(2, Settings(strategy="dmoa"))
    assert dmoa == "forking from step 2: continuing live"  # DMoA steps, and neither tau nor k_in routes it
