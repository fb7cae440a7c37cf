"""The compare screen, driven with Pilot: live columns over the in-process demo server, focus, open and
back, lockstep stepping, the summary's sort, exports that parse, saved comparisons in replay, and SVG
snapshots of a saved comparison at 160×48 and 80×24."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Tabs

from core.compose.compare import ComparePlan
from core.compose.compare_saved import load_saved
from core.demo.scripts import DEMO_PROBLEMS
from core.runtime.config import Settings
from tests.support.paths import FIXTURES
from tests.support.tui import app_for, press_at_once, quiet_second, wait_for
from tui.app import SwarmApp
from tui.cli.launch import OpenCompareLive, OpenCompareSaved
from tui.screens.compare_live import CompareRunScreen, LiveCompareScreen
from tui.screens.compare_saved import SavedCompareScreen
from tui.widgets.compare_summary import SUMMARY_COLUMNS, SummaryTable
from tui.widgets.graph_pane import GraphPane
from tui.widgets.header import ParamsBar, RunHeader

FIXTURE = FIXTURES / "compare" / "demo-math.compare.json"
WIDE, SMALL = (160, 48), (80, 24)


def live_app(tmp: Path, methods: list[str], *, step: bool = False, domain: str = "math") -> SwarmApp:
    settings = Settings(domain=domain, sessions_dir=str(tmp), max_rounds=3)
    plan = ComparePlan(DEMO_PROBLEMS[domain], settings, methods, step=step)
    return app_for(OpenCompareLive(plan, demo=True, demo_chunk_delay=0.0))


def saved_app() -> SwarmApp:
    runs = load_saved([FIXTURE])
    return app_for(OpenCompareSaved(runs, str(FIXTURE)))


async def every_method_waiting(app: SwarmApp, pilot: Any) -> LiveCompareScreen:
    """The live compare screen, once every method of a --step comparison waits for its first step."""
    screen = app.screen
    assert isinstance(screen, LiveCompareScreen)
    await wait_for(pilot, lambda: screen.comparison is not None
                   and all(c.waiting for c in screen.comparison.controls.values()))
    return screen


def done(screen: LiveCompareScreen) -> bool:
    return screen.comparison is not None and not screen.running


async def every_method_done(app: SwarmApp, pilot: Any) -> LiveCompareScreen:
    """The live compare screen, once every method of the comparison has ended."""
    screen = app.screen
    assert isinstance(screen, LiveCompareScreen)
    await wait_for(pilot, lambda: done(screen))
    return screen


async def test_live_columns_fill_and_summary_lists_every_method(tmp_path: Path, embedder: Any) -> None:
    app = live_app(tmp_path, ["dytopo", "dmoa", "topoweaver"])
    async with app.run_test(size=WIDE) as pilot:
        screen = await every_method_done(app, pilot)
        await pilot.pause(0.3)
        for method, column in screen.columns.items():
            text = column.render().plain
            assert column.row.state == "done" and column.row.calls > 0, method
            assert "── answer" in text and "verdict: " in text
        # Each column speaks its method's own unit.
        assert screen.columns["dytopo"].render().plain.startswith("round ")
        assert screen.columns["dmoa"].render().plain.startswith("step ")
        assert screen.columns["topoweaver"].render().plain.startswith("turn ")
        table = screen.query_one(SummaryTable)
        assert table.row_count == 3
        assert [table.get_row_at(i)[0] for i in range(3)] == ["dytopo", "dmoa", "topoweaver"]
        assert table.get_row_at(0)[8] == "±0%"  # the first column is the base of the differences


async def test_a_one_agent_method_says_it_has_no_topology(tmp_path: Path, embedder: Any) -> None:
    # `single` never builds a graph: its column says so rather than waiting for one.
    app = live_app(tmp_path, ["dytopo", "single"])
    async with app.run_test(size=WIDE) as pilot:
        screen = await every_method_done(app, pilot)
        await pilot.pause(0.3)
        assert "topology: none: one agent" in screen.columns["single"].render().plain
        assert " edges" in screen.columns["dytopo"].render().plain


async def test_leaving_a_methods_full_view_does_not_stop_its_run(tmp_path: Path, embedder: Any) -> None:
    app = live_app(tmp_path, ["dytopo", "dmoa"], step=True)
    async with app.run_test(size=WIDE) as pilot:
        screen = await every_method_waiting(app, pilot)
        await pilot.press("2", "enter")
        await pilot.pause(0.2)
        assert isinstance(app.screen, CompareRunScreen)
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert app.screen is screen
        assert not any(c.cancelled for c in screen.comparison.controls.values())  # type: ignore[union-attr]
        await pilot.press("space")  # every method runs on to its own end
        await wait_for(pilot, lambda: done(screen))
        assert [row.state for row in screen.rows.values()] == ["done", "done"]


async def test_focus_open_and_back(tmp_path: Path, embedder: Any) -> None:
    app = live_app(tmp_path, ["dytopo", "dmoa", "single"])
    async with app.run_test(size=WIDE) as pilot:
        screen = await every_method_done(app, pilot)
        await pilot.press("right")
        assert screen.focused_method == "dmoa"
        assert screen.columns["dmoa"].has_class("-focused") and not screen.columns["dytopo"].has_class("-focused")
        await pilot.press("3")
        assert screen.focused_method == "single"
        await pilot.press("right")  # wraps around
        assert screen.focused_method == "dytopo"
        await pilot.press("2", "enter")
        await pilot.pause(0.2)
        detail = app.screen
        assert isinstance(detail, CompareRunScreen) and detail.method == "dmoa"
        assert detail.model.finished is not None  # its whole history was replayed into the full view
        assert detail.model.strategy == "dmoa"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen


@pytest.mark.parametrize("size", [WIDE, SMALL])
async def test_a_methods_full_view_counts_in_its_own_unit(tmp_path: Path, embedder: Any, size: tuple[int, int]) -> None:
    # max_rounds is 3: DyTopo's rounds count against it; single's one call and single-turn's one round do not.
    app = live_app(tmp_path, ["dytopo", "single", "single-turn", "topodim"])
    async with app.run_test(size=size) as pilot:
        screen = await every_method_done(app, pilot)
        shown, graphs = {}, {}
        for number, method in enumerate(["dytopo", "single", "single-turn", "topodim"], 1):
            await pilot.press(str(number), "enter")
            await pilot.pause(0.2)
            detail = app.screen
            assert isinstance(detail, CompareRunScreen) and detail.method == method
            shown[method] = (detail.query_one(RunHeader).render().plain, detail.query_one(ParamsBar).render().plain)
            graphs[method] = str(detail.query_one(GraphPane).border_title)
            await pilot.press("escape")
            await pilot.pause()
    header, bar = shown["single"]
    assert "call 1 " in header and "call 1/" not in header, header
    assert "max" not in bar, bar
    assert "round 1/1 " in shown["single-turn"][0] and "step 1/1 " in shown["topodim"][0]
    rounds = screen.rows["dytopo"].rounds
    assert f"round {rounds}/3 " in shown["dytopo"][0] and "max" in shown["dytopo"][1]
    assert graphs == {"dytopo": f"graph · round {rounds}", "single": "graph · call 1",
                      "single-turn": "graph · round 1", "topodim": "graph · step 1"}


async def test_lockstep_n_steps_every_method_and_shift_n_the_focused_one(tmp_path: Path, embedder: Any) -> None:
    app = live_app(tmp_path, ["dytopo", "dmoa"], step=True)
    async with app.run_test(size=WIDE) as pilot:
        screen = await every_method_waiting(app, pilot)
        assert all(row.calls == 0 for row in screen.rows.values())  # step mode: nothing ran before a key
        await pilot.press("n")
        await wait_for(pilot, lambda: all(c.waiting for c in screen.comparison.controls.values())  # type: ignore[union-attr]
                       and all(row.calls > 0 for row in screen.rows.values()))
        first = {m: row.calls for m, row in screen.rows.items()}
        await pilot.press("right", "N")  # only DMoA moves on
        await wait_for(pilot, lambda: screen.rows["dmoa"].calls > first["dmoa"]
                       and (screen.comparison.controls["dmoa"].waiting  # type: ignore[union-attr]
                            or screen.rows["dmoa"].state == "done"))
        await pilot.pause(0.3)
        assert screen.rows["dytopo"].calls == first["dytopo"]
        await pilot.press("space")  # resume every method: both run to the end
        await wait_for(pilot, lambda: done(screen))
        assert all(row.state == "done" for row in screen.rows.values())


async def test_export_files_parse(tmp_path: Path, embedder: Any) -> None:
    app = live_app(tmp_path, ["dytopo", "single"])
    async with app.run_test(size=WIDE) as pilot:
        screen = await every_method_done(app, pilot)
        await pilot.press("e")
        await pilot.pause()
    stem = screen.record.path.name.removesuffix(".compare.json")  # type: ignore[union-attr]
    data = json.loads((tmp_path / f"{stem}.summary.json").read_text())
    assert [r["method"] for r in data["summary"]] == ["dytopo", "single"]
    assert data["model"] == "scripted-demo" and "options" in data
    rows = list(csv.DictReader(io.StringIO((tmp_path / f"{stem}.summary.csv").read_text())))
    assert [r["method"] for r in rows] == ["dytopo", "single"]
    assert int(rows[0]["calls"]) == screen.rows["dytopo"].calls
    markdown = (tmp_path / f"{stem}.summary.md").read_text()
    assert "| dytopo |" in markdown and "| single |" in markdown and "## Problem" in markdown
    page = (tmp_path / f"{stem}.html").read_text()  # the comparison as one page, each method's steps beside
    assert 'data-method="dytopo"' in page and 'data-method="single"' in page


async def test_summary_sorts_by_a_column_and_reverses() -> None:
    app = saved_app()
    async with app.run_test(size=WIDE) as pilot:
        screen = app.screen
        assert isinstance(screen, SavedCompareScreen)
        table = screen.query_one(SummaryTable)
        table.sort_by(6)  # total tokens
        await pilot.pause()
        totals = [int(table.get_row_at(i)[6].replace(",", "")) for i in range(table.row_count)]
        assert totals == sorted(totals)
        table.sort_by(6)
        await pilot.pause()
        totals = [int(table.get_row_at(i)[6].replace(",", "")) for i in range(table.row_count)]
        assert totals == sorted(totals, reverse=True)


async def test_saved_columns_step_back_and_forth_in_lockstep() -> None:
    app = saved_app()
    async with app.run_test(size=WIDE) as pilot:
        screen = app.screen
        assert isinstance(screen, SavedCompareScreen)
        ends = dict(screen.cursor)
        assert all(ends[label] == len(screen.replayed[label]) for label in ends)  # opens on the answers
        await pilot.press("p")
        assert all(screen.cursor[label] < ends[label] for label in ends)
        dytopo = screen.columns["dytopo"]
        assert dytopo.row.state == "replay" and dytopo.model.finished is None
        await pilot.press("n")
        assert screen.cursor == ends
        assert dytopo.model.finished is not None and dytopo.row.verdict == "no verdict"
        # enter opens that run in the replay screen; esc comes back to the columns.
        await pilot.press("enter")
        await pilot.pause()
        from tui.screens.replay import ReplayScreen

        assert isinstance(app.screen, ReplayScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen


@pytest.mark.parametrize("size", [WIDE, SMALL])
async def test_quick_arrow_presses_leave_the_screen_idle(size: tuple[int, int]) -> None:
    """Two → presses queued at once used to start two tabs refocusing each other for good: a core at 100 %
    until quit, and the number keys no longer switched tabs."""
    app = saved_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, SavedCompareScreen)
        for _ in range(3):
            press_at_once(app, "right", "right")
            await pilot.pause(0.3)
        cpu, handled = await quiet_second(pilot)
        # Idle: a few callbacks (about 40 here; the spin handled ~1,000 and used ~0.4 s of CPU).
        assert handled < 100, handled
        assert cpu < 0.2, cpu
        assert screen.focused_index == 6 % len(screen.columns)  # every press moved once, none twice
        await pilot.press("2")
        assert screen.focused_index == 1 and screen.query_one("#cmp-tabs", Tabs).active == "tab-1"


async def test_small_terminal_shows_tabs_and_the_summary_a_key_away() -> None:
    app = saved_app()
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        assert isinstance(screen, SavedCompareScreen)
        shown = [m for m, c in screen.columns.items() if c.display]
        assert screen.has_class("-narrow")
        assert [m for m in shown if screen.columns[m].has_class("-focused")] == ["dytopo"]
        assert not screen.query_one(SummaryTable).display or not screen.query_one(SummaryTable).region.height
        await pilot.press("s")
        await pilot.pause()
        assert screen.query_one(SummaryTable).region.height > 0
        assert screen.query_one("#cmp-columns").region.height == 0


async def test_small_summary_fits_and_says_what_each_column_said() -> None:
    """At 80×24 the summary keeps the columns that matter, all in view; each verdict reads as in its column
    (cut with a marker), and an answer too long for its column ends in a marker, never silently."""
    app = saved_app()
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        assert isinstance(screen, SavedCompareScreen)
        await pilot.press("s")
        await pilot.pause()
        table = screen.query_one(SummaryTable)
        labels = [str(c.label) for c in table.ordered_columns]
        assert labels == ["method", "verdict", "calls", "total", "wall s", "Δ tokens", "Δ wall"]
        assert table.virtual_size.width <= SMALL[0]
        for i in range(table.row_count):
            method, verdict = table.get_row_at(i)[:2]
            full = screen.rows[method].verdict
            assert verdict == full or (verdict.endswith("…") and full.startswith(verdict[:-1]))
        await pilot.press("s")
        await pilot.pause(0.3)
        column = screen.columns[screen.focused_method]
        text = column.render().plain
        assert f"verdict: {column.row.verdict}" in text
        column.row.answer = "\n".join(f"line {i}" for i in range(1, 41))  # a record with a long answer
        text = column.render().plain
        shown = [line for line in text.splitlines() if line.startswith("line ")]
        assert 0 < len(shown) < 40 and text.rstrip().endswith(f"… {40 - len(shown)} more lines (enter: the full run)")


async def test_sorting_goes_only_by_columns_that_order_something() -> None:
    app = saved_app()
    async with app.run_test(size=WIDE) as pilot:
        screen = app.screen
        assert isinstance(screen, SavedCompareScreen)
        visited = []
        for _ in range(9):
            await pilot.press("o")
            visited.append(SUMMARY_COLUMNS[screen.query_one(SummaryTable).sort_column])
        assert visited == ["method", "verdict", "calls", "prompt", "completion", "total", "wall s", "prompt cache",
                           "method"]
        marked = [str(c.label) for c in screen.query_one(SummaryTable).ordered_columns if str(c.label).endswith("▲")]
        assert marked == ["method ▲"]  # the mark only where the table is sorted


@pytest.mark.parametrize("size", [WIDE, SMALL], ids=["160x48", "80x24"])
def test_snapshot_saved_comparison(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(saved_app(), terminal_size=size)


def test_snapshot_small_summary(snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await pilot.press("s")
        await pilot.pause()

    assert snap_compare(saved_app(), terminal_size=SMALL, run_before=run_before)


async def test_session_picker_lists_a_comparison_and_opens_it_side_by_side(tmp_path: Path) -> None:
    import shutil

    from textual.widgets import DataTable

    from tests.support.tui_sessions import launch_app, picker_rows
    from tui.screens.sessions import SessionPickerScreen

    shutil.copytree(FIXTURE.parent, tmp_path, dirs_exist_ok=True)
    app = launch_app(tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("ctrl+l")
        rows = await picker_rows(app, pilot)
        index = next(i for i, r in enumerate(rows) if r[5].startswith("compare: "))
        assert rows[index][5] == "compare: dytopo, dmoa, topoweaver, topodim"
        assert rows[index][7] == FIXTURE.name
        assert not [r for r in rows if r[7] in ("dytopo.json", "dmoa.json")]  # its sessions are in its folder
        picker = app.screen
        picker.query_one(DataTable).move_cursor(row=index)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SavedCompareScreen)
        assert list(app.screen.columns) == ["dytopo", "dmoa", "topoweaver", "topodim"]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is picker and isinstance(picker, SessionPickerScreen)
