"""What a user reads on the screens after issue 34: a finished pane keeps the reply's own line breaks, a
run that could not start clears its "loading" text and ends with a non-zero code."""

from __future__ import annotations

import dataclasses

import pytest
from textual.widgets import Markdown

from core.runtime import events as ev
from tests.tui.test_tui_support import feed_app, pinned_demo_events, post_events
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
    from tui.entry import main

    started: dict[str, object] = {}

    def run_app(problem: str | None, settings: object, **kwargs: object) -> int:
        started.update(problem=problem, **kwargs)
        return 0

    monkeypatch.setattr(tui.app, "run_app", run_app)
    assert main(["--demo", "--domain", "math"]) == 0
    assert started["problem"] == DEMO_PROBLEMS["math"] and started["demo"] is True
    assert main(["--domain", "math"]) == 0
    assert started["problem"] is None  # no demo, no problem: the launch form
