"""Model replies and session files carrying terminal control sequences (window title, clear screen,
clipboard write, C1 CSI) reach no terminal raw: headless progress and answer, --json, replay --headless,
export to stdout, the sessions listing, and the TUI. Files keep the raw text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.demo.server import RequestInfo, ScriptedServer
from core.runtime import events as ev
from core.sessions.store import load_session
from tests.support.tui import feed_app, post_events
from tui.entry import main as cli_main
from tui.model import RunModel

PWN = "\x1b]0;pwned\x07 \x1b[2J \x1b]52;c;cHduZWQ=\x07 \x9b31m \x7f"
PROBLEM = "Fix \x1b]0;title\x07 this function"


def controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


def hostile_script(info: RequestInfo) -> str:
    if info.role == "Manager":
        if info.call == ev.CallKind.PLAN:
            plan = {"goal": f"goal {PWN}", "terminate": False, "reasoning": f"plan {PWN}", "final_answer": ""}
            return json.dumps(plan)
        return json.dumps(
            {"goal": "", "terminate": True, "reasoning": f"done {PWN}", "final_answer": f"the answer {PWN}"}
        )
    reply = {"public": f"work {PWN}", "private": {"all": f"note {PWN}"}, "query": f"q {PWN}", "key": f"k {PWN}"}
    return f"\x1b[2J{PWN}\n" + json.dumps(reply)  # raw controls around the JSON too


@pytest.fixture()
def hostile_server() -> Any:
    with ScriptedServer(hostile_script) as server:
        yield server


@pytest.fixture()
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty config file and a sessions folder of the test's own."""
    config = tmp_path / "config.toml"
    config.write_text("")
    monkeypatch.setenv("SWARM_TUI_SESSIONS_DIR", str(tmp_path / "sessions"))
    return config


def run_hostile(server: ScriptedServer, config: Path, *extra: str) -> int:
    # The general domain: its answer check takes any text, so the hostile answer itself reaches every output.
    args = ["--headless", "--config", str(config), "--base-url", server.base_url, "--max-rounds", "1",
            "--domain", "general", *extra]
    return cli_main([*args, PROBLEM])


@pytest.mark.usefixtures("embedder")
def test_headless_progress_and_answer_show_controls_as_symbols(
    hostile_server: ScriptedServer, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_hostile(hostile_server, isolated) == 0
    out, err = capsys.readouterr()
    assert controls(out) == [] and controls(err) == []
    assert "the answer ␛]0;pwned␇ ␛[2J ␛]52;c;cHduZWQ=␇ ␛[31m ␡" in out
    assert "goal: goal ␛]0;pwned␇" in err and "Fix ␛]0;title␇ this function" in err
    # The session file keeps the raw text (C1 escaped as JSON \u009b, so `cat` is safe too).
    (saved,) = (isolated.parent / "sessions").glob("*.json")
    assert controls(saved.read_text(encoding="utf-8")) == []
    session = load_session(saved)
    assert session.problem == PROBLEM and session.outcome is not None and session.outcome.final_answer.endswith(PWN)


@pytest.mark.usefixtures("embedder")
def test_headless_json_lines_escape_c1_controls(
    hostile_server: ScriptedServer, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_hostile(hostile_server, isolated, "--json") == 0
    out, err = capsys.readouterr()
    assert controls(out) == [] and controls(err) == []
    events = [json.loads(line) for line in out.splitlines()]
    assert events[-1]["type"] == "run_finished" and events[-1]["final_answer"] == f"the answer {PWN}"


@pytest.mark.usefixtures("embedder")
def test_replay_export_and_listing_of_a_hostile_session(
    hostile_server: ScriptedServer, isolated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_hostile(hostile_server, isolated) == 0
    capsys.readouterr()
    (saved,) = (isolated.parent / "sessions").glob("*.json")
    assert cli_main(["replay", str(saved), "--headless"]) == 0
    out, err = capsys.readouterr()
    assert controls(out + err) == [] and "final answer" in out and "the answer ␛]0;pwned␇" in out
    for fmt in ("md", "json", "toml", "dot", "mermaid"):
        assert cli_main(["export", str(saved), "--format", fmt]) == 0
        out, err = capsys.readouterr()
        assert controls(out + err) == [], fmt
        if fmt in ("md", "json", "toml"):  # dot and mermaid draw the graph, not the outputs
            assert "pwned" in out, fmt
    # A file written with -o keeps the text as recorded.
    target = tmp_path / "out.md"
    assert cli_main(["export", str(saved), "--format", "md", "-o", str(target)]) == 0
    assert "\x1b]0;pwned\x07" in target.read_text(encoding="utf-8")
    capsys.readouterr()
    assert cli_main(["sessions", "--dir", str(saved.parent)]) == 0
    out, err = capsys.readouterr()
    assert controls(out + err) == [] and "Fix ␛]0;title␇ this" in out


def test_a_session_error_quoting_the_file_is_printable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad\x1b[2J.json"
    bad.write_text("{", encoding="utf-8")
    assert cli_main(["replay", str(bad), "--headless"]) == 2
    _, err = capsys.readouterr()
    assert controls(err) == [] and "bad␛[2J.json" in err


# --- the TUI ----------------------------------------------------------------------------------------


def _hostile_events() -> list[ev.Event]:
    return [
        ev.RunStarted(run_id="r", problem=PROBLEM, domain="code", manager="Manager",
                      workers=["Designer", "Developer", "Researcher", "Tester"], roles={}, protocol="phased",
                      strategy="dytopo", model="m", base_url="u", demo=True,
                      params={"tau": 0.3, "k_in": 3, "max_rounds": 1}),
        ev.RoundStarted(round=1, params={"tau": 0.3, "k_in": 3, "max_rounds": 1}),
        ev.ManagerDecided(round=1, terminate=False, next_goal=f"goal {PWN}", reasoning="", plan=True),
        ev.AgentStarted(round=1, agent="Tester", call="work"),
        # What the stream carries: JSON with escaped controls, and a raw one.
        ev.AgentDelta(round=1, agent="Tester", call="work",
                      text='{"public": "x \\u001b]0;pwned\\u0007 \\u009b31m \x1b[2J'),
        ev.Notice(round=1, severity="warning", message=f"Tester: reply unparsed ({PWN})", agent="Tester"),
    ]


def _finish_events() -> list[ev.Event]:
    return [
        ev.AgentFinished(round=1, agent="Tester", call="work", status="done", public=f"tests {PWN}",
                         query=f"q {PWN}", key="k"),
        ev.ManagerDecided(round=1, terminate=True, next_goal="", reasoning=f"done {PWN}",
                          final_answer=f"answer {PWN}"),
        ev.RunFinished(reason="manager", detail=f"done {PWN}", final_answer=f"answer {PWN}",
                       answer_source="manager", rounds=1, prompt_tokens=1, completion_tokens=1),
    ]


def test_the_tui_model_holds_only_printable_text() -> None:
    model = RunModel()
    events = _hostile_events() + _finish_events()
    for event in events:
        model.apply(event)
    agent = model.rounds[1].agents["Tester"]
    for text in (model.problem, model.rounds[1].goal, agent.public, agent.query, model.notices[0].message,
                 model.finished.final_answer, model.finished.detail, model.rounds[1].decision.reasoning):
        assert controls(text) == [], text
    assert agent.public == "tests ␛]0;pwned␇ ␛[2J ␛]52;c;cHduZWQ=␇ ␛[31m ␡"
    assert events[-1].final_answer == f"answer {PWN}"  # the events themselves (the recorder's) are untouched


async def test_the_tui_screen_never_renders_a_control_character() -> None:
    app = feed_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await post_events(app, pilot, _hostile_events())
        streaming = app.export_screenshot()
        assert "pwned" in streaming
        assert controls(streaming) == []
        await post_events(app, pilot, _finish_events())
        finished = app.export_screenshot()
        assert "answer" in finished and controls(finished) == []
