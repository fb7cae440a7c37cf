"""The demo's truth: the scripted server plays its own scenarios whatever it is asked, so a run asking it
for another problem must say which problem it played, in the headless output (text and JSON), the saved
session, the replay and the TUI; its answer and verdicts are never presented as the user's. Asked for its
own problem, nothing changes. Real parts: the CLI in a subprocess, the engine over the loopback scripted
server with the real openai client, real MiniLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.datasets.catalog import resolve
from core.datasets.loader import load_dataset
from core.demo.bench_script import benchmark_script
from core.demo.played import TESTS_LABEL, demo_answer_note, demo_banner, demo_expect_note, demo_header
from core.demo.scripts import DEMO_NAMES, DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.runtime.config import Settings
from core.sessions.export import export_session
from core.sessions.store import load_session
from tests.support.cli import swarm
from tests.support.tui import demo_run, wait_for
from tui.model import RunModel
from tui.widgets.header import RunHeader
from tui.widgets.results_pane import ResultsPane

MATH = DEMO_NAMES["math"]
CODE = DEMO_NAMES["code"]


def env(tmp: Path) -> dict[str, str]:
    return {"SWARM_TUI_SESSIONS_DIR": str(tmp)}


def test_the_demo_names_what_it_plays_and_a_bench_script_plays_its_own_problems() -> None:
    # Whitespace aside (a file or the form may add a newline), the demo's own problem is its own.
    assert demo_script.plays_instead(DEMO_PROBLEMS["code"] + "\n", "code") == ""
    assert demo_script.plays_instead("What is 17*23?", "math") == MATH
    assert demo_script.plays_instead(DEMO_PROBLEMS["math"], "code") == CODE  # another domain's problem
    dataset = load_dataset(resolve("humaneval"))
    problem = dataset.problems[0]
    with ScriptedServer(benchmark_script(dataset.problems)) as server:
        assert server.plays_instead(problem.task, "code") == ""  # bench --demo plays the dataset's problems
        assert server.plays_instead("Write add(a, b)", "code") == CODE
    with ScriptedServer(lambda info: "{}") as server:  # a test's own script cannot say: no claim
        assert server.plays_instead("anything", "code") == ""


def test_headless_text_says_what_the_demo_played_and_the_session_keeps_it(tmp_path: Path) -> None:
    save = tmp_path / "run.json"
    result = swarm("--headless", "--demo", "--domain", "math", "--save", str(save), "What is 17*23?", env=env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert demo_banner(MATH) in result.stderr
    assert demo_answer_note(MATH) in result.stderr
    assert "\\frac{14}{3}" in result.stdout  # the scenario's answer, labelled above as not the user's
    session = load_session(save)
    assert session.metadata.demo_played == MATH and session.outcome is not None
    assert session.outcome.demo_played == MATH
    raw = json.loads(save.read_text())
    assert raw["metadata"]["demo_played"] == MATH and raw["outcome"]["demo_played"] == MATH
    assert f"It played its own problem ({MATH}), not the one below" in export_session(session, "md")
    # Replayed, the run says it again: the model the screens draw from holds it.
    model = RunModel()
    for event in session.replay_events():
        model.apply(event)
    assert model.demo_played == MATH


def test_headless_json_states_what_was_played_in_the_first_and_last_events(tmp_path: Path) -> None:
    result = swarm("--headless", "--demo", "--json", "--domain", "math", "What is 17*23?", env=env(tmp_path))
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["type"] == "run_started" and events[0]["demo_played"] == MATH
    assert events[-1]["type"] == "run_finished" and events[-1]["demo_played"] == MATH
    assert demo_banner(MATH) in result.stderr  # and a person reading stderr hears it too


def test_expect_is_not_applicable_to_a_problem_the_demo_did_not_play(tmp_path: Path) -> None:
    result = swarm("--headless", "--demo", "--domain", "math", "--expect", "391", "What is 17*23?", env=env(tmp_path))
    assert result.returncode == 1, result.stderr  # nothing was checked: never a success
    assert demo_expect_note("391", MATH) in result.stderr
    assert "matches" not in result.stderr


def test_a_code_demo_labels_its_test_verdicts_as_the_demo_problem_s(tmp_path: Path) -> None:
    result = swarm("--headless", "--demo", "--strategy", "topoweaver", "Write add(a, b) returning a+b",
                   env=env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert demo_banner(CODE) in result.stderr
    tests = [line for line in result.stderr.splitlines() if "PASSED" in line and ":" in line and "turn" not in line]
    assert tests and all(line.startswith(f"{TESTS_LABEL}: ") for line in tests), tests
    assert not any(line.startswith("tests: ") for line in result.stderr.splitlines())
    assert demo_answer_note(CODE) in result.stderr


def test_the_demo_s_own_problem_runs_as_before(tmp_path: Path) -> None:
    result = swarm("--headless", "--demo", "--json", "--domain", "math", "--expect", "14/3", env=env(tmp_path))
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert "demo_played" not in events[0] and "demo_played" not in events[-1]
    assert "expected answer '14/3': matches" in result.stderr
    assert "plays its own problem" not in result.stderr and "not yours" not in result.stderr
    text = swarm("--headless", "--demo", "--strategy", "topoweaver", env=env(tmp_path))  # the code demo, tests run
    assert text.returncode == 0, text.stderr
    assert "tests: PASSED" in text.stderr and TESTS_LABEL not in text.stderr
    assert "not yours" not in text.stderr and "def make_palindrome" in text.stdout


@pytest.mark.usefixtures("embedder")
@pytest.mark.parametrize("problem", ["What is 17*23?", DEMO_PROBLEMS["math"]])
async def test_the_tui_shows_which_problem_the_demo_played(tmp_path: Path, problem: str) -> None:
    foreign = problem != DEMO_PROBLEMS["math"]
    app = demo_run(Settings(domain="math", sessions_dir=str(tmp_path)), problem)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        screen = app.swarm_screen
        header = screen.query_one(RunHeader).render().plain.splitlines()[0]
        result = screen.query_one(ResultsPane).query_one("#demo-played")
        if foreign:
            assert header.startswith(f"▍{demo_header(MATH)} What is 17*23?")
            assert result.display and demo_answer_note(MATH) in str(result.render())
        else:
            assert "DEMO plays" not in header and not result.display


async def test_the_mcp_result_names_the_problem_the_demo_played(tmp_path: Path, embedder: object) -> None:
    from tests.support.mcp import connected, finished, ok, poll_until

    async with connected(tmp_path, embedder) as (session, _, _):
        results = {}
        for task in ("What is 17*23?", DEMO_PROBLEMS["math"]):
            started = await ok(session, "swarm_start", task=task, domain="math")
            await poll_until(session, started["task_id"], finished)
            results[task] = await ok(session, "swarm_result", task_id=started["task_id"])
    foreign, own = results["What is 17*23?"], results[DEMO_PROBLEMS["math"]]
    assert foreign["demo_played"] == MATH and demo_answer_note(MATH) in foreign["message"]
    assert own["demo_played"] is None and "not to yours" not in own["message"]
