"""The debate plugin through the app's faces: listed, run with --demo headless (every domain), saved,
replayed, forked, exported to HTML, compared (live and saved), benchmarked, started and steered through
MCP, offered by the launch form — and no file of the app names it. Installed with
``pip install -e examples/llm-debate``; run with ``pytest examples/llm-debate/tests``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from llm_debate.prompts import CALL_UPDATE
from llm_debate.vote import majority

from core.compose.plan import BackendChoice
from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from core.mcp.tasks import SwarmManager
from core.methods.catalogue import get_method_info, method_names
from core.runtime.config import Settings

NAME = "llm-debate"
APP = Path(__file__).resolve().parents[3]  # the app's repository (examples/llm-debate/tests/ -> root)
TIMEOUT = 300  # a guard against hangs, not a speed assertion
# The installed command, as a user runs it (``python -m tui`` would put the working folder first on sys.path,
# where a run's own sessions/ folder would stand in for the app's package of that name).
COMMAND = [str(Path(sys.executable).with_name("swarm-tui"))]


def swarm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=TIMEOUT,
                          env=env, cwd=cwd, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return done


def events_of(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text())["events"])


def test_the_entry_point_makes_it_a_method() -> None:
    assert NAME in method_names()
    info = get_method_info(NAME)
    assert info.resolve({}) == {"agents": 3, "rounds": 2}
    assert info.resolve({"agents": "4", "rounds": "1"}) == {"agents": 4, "rounds": 1}


def test_strategies_lists_it_with_its_options(tmp_path: Path) -> None:
    out = swarm("strategies", cwd=tmp_path).stdout
    assert f"{NAME}  " in out
    assert "-o agents=3 (2..6): N, the debaters" in out and "-o rounds=2 (0..5)" in out
    fidelity = swarm("strategies", "--fidelity", cwd=tmp_path).stdout
    assert f"\n{NAME}\n" in fidelity and "majority of the last round's answers" in fidelity  # its own notes


def test_a_bad_option_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([*COMMAND, "--headless", "--demo", "--strategy", NAME, "-o", "agents=9",
                           "x"], capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=tmp_path, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == f"swarm-tui: error: [strategy.{NAME}] agents must be between 2 and 6, got 9"


@pytest.mark.parametrize(("domain", "answer"), [("math", "\\frac{14}{3}"), ("code", "return string + string[:i][::-1]"),
                                                ("general", "monorepo")])
def test_demo_runs_headless_and_the_debate_agrees(tmp_path: Path, domain: str, answer: str) -> None:
    saved = tmp_path / "debate.json"
    out = swarm("--headless", "--demo", "--domain", domain, "--strategy", NAME, "--save", str(saved), cwd=tmp_path)
    assert answer in out.stdout
    assert "majority 3/3 agree" in out.stderr
    events = events_of(saved)
    finished = [e for e in events if e["type"] == "agent_finished"]
    assert len(finished) == 9  # 3 debaters x (1 answer + 2 debate rounds)
    graphs = [e for e in events if e["type"] == "topology_built"]
    assert [len(g["routing"]["edges"]) for g in graphs] == [0, 6, 6]  # round 1 alone, then all-to-all
    assert {e["kind"] for g in graphs for e in g["routing"]["edges"]} == {"debate"}
    started = next(e for e in events if e["type"] == "run_started")
    assert started["strategy"] == NAME and started["method_options"] == {"agents": 3, "rounds": 2}


def test_the_code_debate_corrects_the_draft(tmp_path: Path) -> None:
    """Debater1's first draft is wrong; after reading the others it gives their fix (the demo's script)."""
    saved = tmp_path / "debate.json"
    swarm("--headless", "--demo", "--strategy", NAME, "--save", str(saved), cwd=tmp_path)
    first = [e for e in events_of(saved) if e["type"] == "agent_finished" and e["agent"] == "Debater1"]
    assert "range(1, len(string))" in first[0]["public"] and "Corrected" in first[1]["public"]


def test_replay_fork_and_html_export(tmp_path: Path) -> None:
    saved, fork, page = tmp_path / "debate.json", tmp_path / "fork.json", tmp_path / "debate.html"
    swarm("--headless", "--demo", "--domain", "math", "--strategy", NAME, "--save", str(saved), cwd=tmp_path)
    assert "\\frac{14}{3}" in swarm("replay", str(saved), "--headless", cwd=tmp_path).stdout
    swarm("replay", str(saved), "--fork", "1", "--headless", "--demo", "--save", str(fork), cwd=tmp_path)
    events = events_of(fork)
    updates = [e for e in events if e["type"] == "agent_finished" and e["call"] == CALL_UPDATE]
    assert len(updates) == 6 and json.loads(fork.read_text())["metadata"]["parent"]["round"] == 1
    swarm("export", str(saved), "--format", "html", "-o", str(page), cwd=tmp_path)
    html = page.read_text()
    assert NAME in html and "Debater2" in html


def test_compare_live_then_saved_and_bench(tmp_path: Path) -> None:
    out = swarm("compare", "--demo", "x", "--strategy", f"{NAME},single", "--domain", "math", "--headless",
                cwd=tmp_path).stdout
    row = next(line for line in out.splitlines() if line.startswith(NAME))
    assert "\\frac{14}{3}" in row
    record = next((tmp_path / "sessions").glob("*.compare.json"))
    page = tmp_path / "compare.html"
    swarm("export", str(record), "--format", "html", "-o", str(page), cwd=tmp_path)
    assert NAME in page.read_text()
    bench = swarm("bench", "math500", "--demo", "--limit", "2", "--strategy", NAME, "--out", str(tmp_path / "b"),
                  cwd=tmp_path).stdout
    row = next(line for line in bench.splitlines() if line.startswith(NAME))
    assert "2/2" in row and "100.0%" in row


def test_majority_votes_equivalent_math_and_breaks_ties_to_the_first() -> None:
    answer, who, agree = majority("math", {"Debater1": "so \\boxed{7}", "Debater2": "\\boxed{\\frac{14}{3}}",
                                           "Debater3": "it is $\\boxed{14/3}$"})
    assert (who, agree) == ("Debater2", "2/3 agree") and answer == "\\frac{14}{3}"
    assert majority("general", {"Debater1": "Yes.", "Debater2": "No."})[1] == "Debater1"
    assert majority("code", {"Debater1": "no code here"})[0] == ""


async def test_mcp_starts_it_and_steers_it_with_a_note_and_a_stop(tmp_path: Path) -> None:
    server = ScriptedServer(demo_script, ServerBehaviour(latency=0.05))
    server.start()
    manager = SwarmManager(Settings(max_retries=0, sessions_dir=str(tmp_path)),
                           backend=BackendChoice(demo=True, server=server))
    try:
        entry = manager.start("x", "math", NAME)
        manager.steer(entry.id, {"action": "note", "to": "Debater2", "text": "Check f(0) twice.", "at_round": 2})
        manager.steer(entry.id, {"action": "stop", "at_round": 3})
        manager.steer(entry.id, {"action": "pin", "src": "Debater1", "dst": "Debater2", "at_round": 2})
        done = await asyncio.wait_for(manager.wait(entry.id), TIMEOUT)
    finally:
        await asyncio.wait_for(manager.aclose(), 30)
        server.stop()
    assert done.finished is not None and done.finished.rounds == 2  # stopped at round 3's barrier
    noted = [r for r in server.requests if r.role == "Debater2" and r.round == 2]
    assert noted and "Check f(0) twice." in json.dumps(noted[0].messages)
    others = [r for r in server.requests if r.role != "Debater2" and r.round == 2]
    assert others and all("Check f(0) twice." not in json.dumps(r.messages) for r in others)
    refused = [e for e in done.steering if e.reason]
    assert refused and "llm-debate cannot take pin" in refused[0].reason


async def test_the_launch_form_offers_it_with_its_options(tmp_path: Path) -> None:
    from textual.widgets import Select

    from tui.app import SwarmApp
    from tui.cli.launch import OpenRun
    from tui.screens.launch import LaunchScreen

    app = SwarmApp(OpenRun(None, Settings(sessions_dir=str(tmp_path))), state_path=None, load_embedder=False,
                   start_engine=False)
    async with app.run_test(size=(160, 48)) as pilot:
        form = app.screen
        assert isinstance(form, LaunchScreen)
        form.query_one("#strategy", Select).value = NAME
        labels: list[str] = []
        for _ in range(50):  # the form rebuilds its option fields after the change (a busy machine: a while)
            await pilot.pause(0.1)
            labels = [str(label.render()) for label in form.query("#method-options Label")]
            if "agents (2..6)" in labels:
                break
        assert "agents (2..6)" in labels and "rounds (0..5)" in labels
        assert not any("max_tokens" in label for label in labels)  # call limits stay in the config file


def test_no_file_of_the_app_names_the_plugin() -> None:
    """The app knows the debate only through its entry point: no line of core/, tui/ or the app's tests."""
    naming = []
    for folder in ("core", "tui", "tests"):
        for path in (APP / folder).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".tcss", ".toml", ".json", ".md", ".svg", ".txt"):
                text = path.read_text(errors="replace")
                if "llm-debate" in text or "llm_debate" in text:
                    naming.append(str(path.relative_to(APP)))
    assert naming == []
