"""While an agent streams, its pane shows the text of its public field, not the JSON around it; replies
that are not that JSON shape still show in full. Plus: every new key is in the footer, the help screen
and the palette, with an id and a tooltip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.binding import Binding
from textual.widgets import Footer

from core.runtime import events as ev
from tests.support.paths import ROOT
from tui.bindings import REPLAY_BINDINGS, RUN_BINDINGS
from tui.model import RunModel
from tui.screens.launch import LaunchScreen
from tui.screens.sessions import SessionPickerScreen
from tui.streamtext import JsonUnescaper, ReplyStream, display_text

WORK = json.dumps({"public": 'Fixed it:\n```python\nprint("hi")\t# é\n```', "private": {"Tester": "re-run"},
                   "query": "I need the failing cases", "key": "I offer the fixed code"})
CASES = [
    (WORK, 'Fixed it:\n```python\nprint("hi")    # é\n```'),
    (json.dumps({"query": "need x", "key": "offer y"}), "query: need x\nkey: offer y"),
    (json.dumps({"goal": "fix it", "terminate": False, "reasoning": "tests fail"}),
     "goal: fix it\nreasoning: tests fail"),
    ("```json\n" + json.dumps({"public": "fenced"}) + "\n```", "fenced"),
    (json.dumps({"private": {"A": "x"}, "query": "q", "public": "late"}), "query: q\n\nlate"),
    # Prose that never was JSON is shown as written: its backslashes are the model's (LaTeX), not escapes.
    ("Plain prose: $\\frac{14}{3}$ and \\boxed{7}", "Plain prose: $\\frac{14}{3}$ and \\boxed{7}"),
    ("[FINAL] \\frac{14}{3}", "[FINAL] \\frac{14}{3}"),
    ('{"public": "ok so far" then garbage', '{"public": "ok so far" then garbage'),
    ('<think>plan</think>{"public": "x"}', '<think>plan</think>{"public": "x"}'),
]


@pytest.mark.parametrize(("raw", "shown"), CASES)
@pytest.mark.parametrize("size", [1, 2, 3, 5, 16, 1000])
def test_stream_shows_the_public_text_whatever_the_chunking(raw: str, shown: str, size: int) -> None:
    stream = ReplyStream()
    text = ""
    for i in range(0, len(raw), size):
        added = stream.feed(raw[i : i + size])
        text = stream.text if added is None else text + added
    assert text == stream.text == shown == display_text(raw)


def test_a_reply_that_turns_out_not_to_be_json_starts_the_pane_over() -> None:
    model = RunModel()
    model.apply(ev.RunStarted(run_id="r", problem="p", domain="code", manager="Manager", workers=["Tester"],
                              roles={}, protocol="phased", strategy="dytopo", model="m", base_url="u", demo=True,
                              params={"tau": 0.3, "k_in": 3, "max_rounds": 5}))
    model.apply(ev.AgentStarted(round=1, agent="Tester", call="work"))
    agent = model.rounds[1].agents["Tester"]
    model.apply(ev.AgentDelta(round=1, agent="Tester", call="work", text='{"public": "half'))
    assert agent.text == "half" and agent.attempt == 1
    model.apply(ev.AgentDelta(round=1, agent="Tester", call="work", text='" oops\\n'))
    assert agent.text == JsonUnescaper().feed('{"public": "half" oops\\n')
    assert agent.attempt == 2  # the pane's stream key changes, so it redraws from the start


# --- keys -----------------------------------------------------------------------------------------


def _all_bindings() -> list[Binding]:
    out = [*RUN_BINDINGS, *REPLAY_BINDINGS]
    for screen in (LaunchScreen, SessionPickerScreen):
        out += [b for b in screen.BINDINGS if isinstance(b, Binding)]
    return out


def test_every_binding_has_an_id_and_a_tooltip() -> None:
    for binding in _all_bindings():
        assert binding.id and binding.tooltip, binding


async def test_new_keys_are_in_the_footer_help_and_palette(tmp_path: Path) -> None:
    from tests.support.tui_sessions import replay_app
    from tui.commands import SwarmCommands
    from tui.screens.help import HelpScreen

    app = replay_app(ROOT / "sessions" / "example-code.json", tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        replay = app.screen
        footer_keys = {key.description for key in replay.query_one(Footer).query("FooterKey")}
        assert {"fork", "open"} <= footer_keys
        titles = [hit.text async for hit in SwarmCommands(replay).discover()]
        assert any(t and t.startswith("Fork from this round") for t in titles)
        assert {f"Export session as {n}" for n in ("Markdown", "JSON", "TOML", "DOT", "Mermaid")} <= set(titles)
        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        ids = {row[2] for row in help_screen.rows}
        assert {"replay_fork", "open_session"} <= ids
