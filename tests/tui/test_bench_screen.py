"""``swarm-tui bench show``: the benchmark screen with Pilot, over a folder the real CLI wrote against
the scripted server (real sessions)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from core.bench.report import build_report, load_folder
from tests.support.bench import HUMANEVAL, bench, right_server  # noqa: F401  (fixture)
from tests.support.tui import app_for
from tui.cli.launch import OpenBenchShow


@pytest.fixture
def folder(tmp_path: Path, right_server) -> Path:  # noqa: F811
    assert bench(tmp_path, HUMANEVAL, "--limit", "3", "--strategy", "single", server=right_server) == 0
    return tmp_path


async def test_the_screen_shows_every_method_and_opens_a_run_in_replay(folder: Path, tmp_path: Path) -> None:
    from tui.screens.bench import BenchScreen
    from tui.screens.replay import ReplayScreen

    app = app_for(OpenBenchShow(build_report([load_folder(folder)])))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        methods = screen.query_one("#bench-methods", DataTable)
        assert methods.row_count == 1 and str(methods.get_row_at(0)[0]) == "single"
        assert str(methods.get_row_at(0)[3]).startswith("[")
        assert str(methods.ordered_columns[3].label) == "95% (Wilson)"  # the interval's method, once, in its name
        labels = [str(c.label) for c in methods.ordered_columns]
        assert labels[-1] == "wall s" and sum(c.get_render_width(methods) for c in methods.ordered_columns) <= 80
        problems = screen.query_one("#bench-problems", DataTable)
        assert problems.row_count == 3
        problems.move_cursor(row=1, column=1)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ReplayScreen)
        assert "HumanEval_1" in app.screen.source
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, BenchScreen)


async def test_a_problem_name_cell_says_what_to_do(folder: Path) -> None:
    app = app_for(OpenBenchShow(build_report([load_folder(folder)])))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.screen.query_one("#bench-problems", DataTable).move_cursor(row=0, column=0)
        await pilot.press("enter")
        await pilot.pause()
        assert any("method" in n.message for n in app._notifications)
