"""Code execution from the TUI (issue 5): the launch-form switch (off by default), the params bar
saying whether tests run, and the results pane listing every sandboxed test run of the demo."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Select, Static, Switch

from core.compose.assembly import make_evaluator
from core.demo.scripts import DEMO_PROBLEMS
from core.runtime.config import Settings
from core.sessions.store import load_session
from tests.support.tui import demo_run, form_app, wait_for
from tui.screens.launch import LaunchScreen
from tui.screens.run import RunScreen
from tui.widgets.header import ParamsBar
from tui.widgets.results_pane import ResultsPane


def bar(screen: RunScreen) -> str:
    return str(screen.query_one(ParamsBar).render()).replace("\xa0", " ")


async def test_switch_is_off_by_default_and_the_run_says_so(tmp_path: Path) -> None:
    app = form_app(Settings(sessions_dir=str(tmp_path)), demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(app.screen, LaunchScreen)
        switch = app.screen.query_one("#execute_code", Switch)
        assert switch.value is False and not switch.disabled
        assert "run code tests after each round (sandbox)" in str(app.screen.query_one("#execute-label").render())
        await pilot.press("ctrl+r")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen) and screen.settings.execute_code is False
        assert "tests: off" in bar(screen)


async def test_switch_on_reaches_the_run_settings_and_the_params_bar(tmp_path: Path) -> None:
    app = form_app(Settings(sessions_dir=str(tmp_path)), demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        app.screen.query_one("#domain", Select).value = "math"
        await pilot.pause()
        assert app.screen.query_one("#execute_code", Switch).disabled  # code tests: code domain only
        app.screen.query_one("#domain", Select).value = "code"
        await pilot.pause()
        await pilot.press("ctrl+g")  # the switch's key
        assert app.screen.query_one("#execute_code", Switch).value is True
        await pilot.press("ctrl+r")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen) and screen.settings.execute_code is True
        assert make_evaluator(screen.settings) is not None  # the run screen's rule is headless's rule
        assert "tests: on" in bar(screen)
        assert "tests: on" in str(screen.query_one("#tests", Static).render())


async def test_tests_on_without_isolation_stay_on_the_form_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.evaluation.sandbox import ISOLATION_ENV, isolation

    monkeypatch.setenv(ISOLATION_ENV, "off")
    monkeypatch.setattr(isolation, "_ALLOWED_PROCESS", False)  # the suite accepts it (conftest): not here
    isolation.probe_isolation.cache_clear()
    try:
        app = form_app(Settings(sessions_dir=str(tmp_path)), demo=True)
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.press("ctrl+g")
            await pilot.press("ctrl+r")
            await pilot.pause()
            assert isinstance(app.screen, LaunchScreen)  # no run started
            said = [n.message for n in app._notifications]
            assert any(m.startswith("model-written code is not run without isolation") for m in said), said
    finally:
        monkeypatch.undo()
        isolation.probe_isolation.cache_clear()


async def test_demo_run_with_execution_lists_every_test_run_and_the_solved_flag(tmp_path: Path,
                                                                                embedder: object) -> None:
    settings = Settings(domain="code", sessions_dir=str(tmp_path), execute_code=True)
    app = demo_run(settings, DEMO_PROBLEMS["code"])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.finished is not None)
        await pilot.pause(0.1)
        screen = app.swarm_screen
        runs = screen.model.test_runs
        # The draft's loop starts at 1: 'x' and 'xyx' fail until the Developer fixes it in round 3.
        assert [(r.round, r.outcome) for r in runs] == [(1, "WRONG_ANSWER"), (2, "WRONG_ANSWER"), (3, "PASSED")]
        assert "make_palindrome('x')" in runs[0].failing_test
        shown = str(screen.query_one("#tests", Static).render())
        lines = shown.splitlines()
        assert lines[0] == "test runs (sandbox)"
        assert lines[1].startswith("R1 ✗ WRONG_ANSWER  assert make_palindrome('x') == 'x'")
        assert lines[2].startswith("R2 ✗ WRONG_ANSWER") and lines[3].startswith("R3 ✓ PASSED")
        assert lines[1].endswith(f"{runs[0].duration_s:.2f}s")
        assert screen.model.finished.solved is True
        assert lines[-1] == "solved: yes — the last test run passed"
        assert screen.query_one(ResultsPane).copy_text() == screen.model.finished.final_answer
        assert "tests: on" in bar(screen)
    saved = load_session(screen.recorder.path)
    assert [t.outcome for r in saved.rounds for t in r.test_runs] == ["WRONG_ANSWER", "WRONG_ANSWER", "PASSED"]


@pytest.mark.parametrize("solved", [True, False])
def test_solved_flag_line_follows_the_run(solved: bool) -> None:
    from core.runtime import events as ev
    from tui.widgets.results_pane import test_runs_content

    runs = [ev.TestRun(round=1, outcome="PASSED" if solved else "RUNTIME_ERROR", passed=solved,
                       failing_test="" if solved else "assert f(1) == 2", duration_s=0.1234)]
    finished = ev.RunFinished(reason="max_rounds", detail="d", final_answer="", answer_source="", rounds=1,
                              prompt_tokens=0, completion_tokens=0, solved=solved)
    text = str(test_runs_content(runs, "on", finished))
    assert ("solved: yes" in text) is solved and ("solved: NO" in text) is not solved
    assert "0.12s" in text and (("assert f(1) == 2" in text) is not solved)
    assert str(test_runs_content([], "off", None)) == ""
