"""The exported pages in Chromium: a session steps round by round and draws each round's recorded edges, a
hostile reply never runs, nothing is fetched, the page reads without scripts; a comparison and a benchmark
report open and fit a phone's width."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from core.bench.report import write_report
from tests.support.bench import HUMANEVAL, bench
from tests.support.browser import open_page, photograph
from tests.support.html import hostile_session, steered_session, write_session
from tests.support.paths import FIXTURES
from tui.entry import main

pytestmark = pytest.mark.browser
COMPARE = FIXTURES / "compare" / "demo-math.compare.json"
VISIBLE_EDGES = """() => [...document.querySelectorAll('section.step')].filter(s => s.offsetParent !== null)
  .flatMap(s => [...s.querySelectorAll('g.edge')].map(g => [s.dataset.step, g.dataset.src, g.dataset.dst,
  g.dataset.kind, (+g.dataset.score).toFixed(2)]))"""


def _export(session: Any, tmp_path: Path, name: str) -> Path:
    source = write_session(session, tmp_path / f"{name}.json")
    out = tmp_path / f"{name}.html"
    assert main(["export", str(source), "--format", "html", "-o", str(out)]) == 0
    return out


def test_a_session_page_steps_to_round_2_draws_its_edges_and_never_runs_the_reply(
    browser: Any, tmp_path: Path, shots: Path
) -> None:
    session = hostile_session()
    page_file = _export(session, tmp_path, "hostile")
    watched = open_page(browser, page_file.as_uri())
    page = watched.page
    assert page.inner_text(".stepper .where") == "round 1 of 3"
    page.keyboard.press("ArrowRight")
    assert page.inner_text(".stepper .where") == "round 2 of 3"
    expected = sorted(["2", e.src, e.dst, e.kind, f"{e.score:.2f}"] for e in session.rounds[1].edges)
    assert sorted(page.evaluate(VISIBLE_EDGES)) == expected
    assert "window.__pwned = 1" in page.inner_text("section.step.on")  # the reply shows, as text
    page.click(".stepper .next")
    assert page.inner_text(".stepper .where") == "round 3 of 3"
    assert page.locator(".stepper .next").is_disabled()
    page.keyboard.press("Home")
    assert page.inner_text(".stepper .where") == "round 1 of 3"
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.__pwned === undefined")
    assert not watched.dialogs and not watched.errors  # a blocked load or script would be a CSP error here
    assert all(url.startswith("file:") for url in watched.requests)
    widths = photograph(browser, page_file.as_uri(), shots, "session", keys=("ArrowRight",))
    assert widths[1] <= 390  # nothing overflows a phone's width


def test_without_scripts_the_page_is_every_round_in_order(browser: Any, tmp_path: Path) -> None:
    page_file = _export(hostile_session(), tmp_path, "plain")
    page = open_page(browser, page_file.as_uri(), scripts=False).page
    visible = page.evaluate("() => [...document.querySelectorAll('section.step')]"
                            ".filter(s => s.offsetParent !== null).map(s => s.dataset.step)")
    assert visible == ["1", "2", "3"]
    assert not page.locator(".stepper").is_visible()


def test_pinned_and_cut_edges_are_drawn_and_removed_edges_show_on_request(browser: Any, tmp_path: Path,
                                                                         shots: Path) -> None:
    page_file = _export(steered_session(), tmp_path, "steered")
    page = open_page(browser, page_file.as_uri() + "#step-2").page
    assert page.inner_text(".stepper .where") == "round 2 of 3"
    assert page.locator("section.step.on g.edge.pinned").is_visible()
    assert page.locator("section.step.on g.edge-removed.cut").is_visible()  # a cut shows without asking
    cycle = page.locator("section.step.on g.edge-removed:not(.cut)")
    assert cycle.count() == 0 or not cycle.first.is_visible()
    page.check("#show-removed")
    assert cycle.count() == 0 or cycle.first.is_visible()
    photograph(browser, page_file.as_uri() + "#step-2", shots, "steered")


def test_a_comparison_page_shows_the_summary_and_steps_every_column(browser: Any, tmp_path: Path,
                                                                   shots: Path) -> None:
    out = tmp_path / "compare.html"
    assert main(["export", str(COMPARE), "--format", "html", "-o", str(out)]) == 0
    watched = open_page(browser, out.as_uri())
    page = watched.page
    methods = page.evaluate("() => [...document.querySelectorAll('.column')].map(c => c.dataset.method)")
    rows = page.evaluate("() => [...document.querySelectorAll('table.summary tr')].slice(1)"
                         ".map(r => r.cells[0].innerText)")
    assert methods and rows == methods
    shown = page.evaluate("() => [...document.querySelectorAll('.column')].map(c => "
                          "[...c.querySelectorAll('section.step')].filter(s => s.offsetParent !== null).length)")
    assert all(n == 1 for n in shown)  # one step per column at a time
    page.keyboard.press("ArrowRight")
    assert not watched.errors and all(url.startswith("file:") for url in watched.requests)
    widths = photograph(browser, out.as_uri(), shots, "compare")
    assert widths[1] <= 390


def test_the_bench_report_page_draws_its_plots_and_links_each_run(browser: Any, tmp_path: Path,
                                                                 shots: Path) -> None:
    # A checkout's path can be long and has no break in it: the page must still fit a phone (CI's clone did not).
    dataset = tmp_path / ("a_checkout_folder_whose_name_has_no_break_in_it_" * 2) / "humaneval.jsonl"
    dataset.parent.mkdir()
    shutil.copy(HUMANEVAL, dataset)
    # In a thread of its own: the bench runs its own asyncio loop, and Playwright's sync API has one running here.
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(bench, tmp_path, dataset, "--demo", "--limit", "2", "--strategy", "single,chain"
                           ).result() == 0
    write_report([tmp_path])
    report = tmp_path / "report.html"
    watched = open_page(browser, report.as_uri())
    page = watched.page
    sizes = page.evaluate("() => [...document.querySelectorAll('figure.plot svg')]"
                          ".map(s => s.getBoundingClientRect().width)")
    assert len(sizes) == 3 and all(w > 100 for w in sizes)
    hrefs = page.evaluate("() => [...document.querySelectorAll('td a')].map(a => a.href)")
    assert len(hrefs) == 4
    for href in hrefs:
        assert Path(href.removeprefix("file://")).is_file(), href
    assert not watched.errors and all(url.startswith(("file:", "data:")) for url in watched.requests)
    widths = photograph(browser, report.as_uri(), shots, "bench-report")
    assert widths[1] <= 390
