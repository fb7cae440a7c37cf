"""What a user reads on the screens after issue 34: a finished pane keeps the reply's own line breaks, a
run that could not start clears its "loading" text and ends with a non-zero code."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from textual.widgets import Markdown

from core.runtime import events as ev
from tests.support.tui import app_for, feed_app, pinned_demo_events, post_events
from tui.cli.launch import OpenReplay
from tui.widgets.agent_pane import AgentPane

TESTER_REPORT = "4 pass, 2 fail.\nFAIL test_empty\nFAIL test_single\n\n```python\nx = 1\ny = 2\n```"


@pytest.fixture(scope="module")
def events(embedder: object) -> tuple[ev.Event, ...]:
    return pinned_demo_events()


async def test_a_finished_pane_keeps_the_reply_s_line_breaks(events: tuple[ev.Event, ...]) -> None:
    last = max(i for i, e in enumerate(events) if isinstance(e, ev.AgentFinished) and e.agent != "Manager"
               and e.public)
    finished = events[last]
    assert isinstance(finished, ev.AgentFinished)
    changed = [*events[:last], dataclasses.replace(finished, public=TESTER_REPORT), *events[last + 1:]]
    app = feed_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await post_events(app, pilot, changed)
        pane = app.screen.query_one(f"#agent-{finished.agent}", AgentPane)
        blocks = [str(getattr(block, "_content", "")) for block in pane.query_one(Markdown).children]
        assert blocks[0] == "4 pass, 2 fail.\nFAIL test_empty\nFAIL test_single"  # as it streamed, line by line
        assert blocks[1] == "x = 1\ny = 2"  # the code block as it was




def test_demo_alone_runs_the_demo_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`swarm-tui --demo` opens a run of the demo's own problem, not a form waiting for ctrl+r."""
    import tui.app
    from core.demo.scripts import DEMO_PROBLEMS
    from tui.cli.launch import OpenRun
    from tui.entry import main

    started: dict[str, object] = {}

    def run_request(request: OpenRun) -> int:
        started.update(problem=request.problem, demo=request.demo)
        return 0

    monkeypatch.setattr(tui.app, "run_request", run_request)
    assert main(["--demo", "--domain", "math"]) == 0
    assert started["problem"] == DEMO_PROBLEMS["math"] and started["demo"] is True
    assert main(["--domain", "math"]) == 0
    assert started["problem"] is None  # no demo, no problem: the launch form


def test_the_80x24_header_shortens_fields_before_cutting_a_word() -> None:
    """A paused run on a long model name at 80 cells: "paused" whole (the position says before what), never
    "paused before r…"."""
    from tui.model import RunModel
    from tui.widgets.header import status_line

    model = RunModel()
    model.model_name = "Qwen2.5-Coder-32B-Instruct-GGUF-Q4_K_M-long-build-name"
    model.domain, model.params, model.control_status, model.mode = "code", {"tau": 0.3, "k_in": 3, "max_rounds": 5}, \
        "paused", "step"
    line = status_line(model, 3.0, width=78).plain
    assert len(line) <= 78 and "…" not in line
    assert line.startswith("paused · round 0/5")


async def test_help_lists_palette_commands_once_and_k_in_names_its_limit(events: tuple[ev.Event, ...]) -> None:
    from tui.screens.help import HelpScreen

    app = feed_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await post_events(app, pilot, events)
        for _ in range(4):
            await pilot.press("K")
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any(m.startswith("k_in is already 1, its lowest (1..") for m in said), said
        await pilot.press("f1")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        palette = [row for row in screen.rows if row[1] == "palette"]
        assert len(palette) == 1 and "Export session as Markdown" in palette[0][3]


async def test_a_paused_replay_does_not_say_mode_auto(events: tuple[ev.Event, ...], tmp_path: Path) -> None:
    from core.sessions.model import session_from_events
    from core.sessions.store import load_session, save_session
    from tui.widgets.header import ParamsBar

    path = tmp_path / "demo.json"
    save_session(session_from_events([e for e in events if not isinstance(e, ev.AgentDelta)]), path)
    session = load_session(path)
    app = app_for(OpenReplay(session, path))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        bar = str(app.screen.query_one(ParamsBar).render()).replace("\xa0", " ")
        assert "paused" in bar and "mode auto" not in bar
