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
from core.sessions.model import Session
from sessions import EXAMPLES_DIR
from tests.support.bench import HUMANEVAL, bench
from tests.support.browser import open_page, photograph
from tests.support.html import LONG_REPLY, hostile_session, long_reply_session, steered_session, write_session
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
    shutil.copytree(COMPARE.parent, tmp_path, dirs_exist_ok=True)  # each method's page is written beside its session
    out = tmp_path / "compare.html"
    assert main(["export", str(tmp_path / COMPARE.name), "--format", "html", "-o", str(out)]) == 0
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
    own = page.evaluate("() => [...document.querySelectorAll('.column h2 a.own')].map(a => a.href)")
    assert len(own) == len(methods)
    for href in own:  # each column links that method's own session page
        run = open_page(browser, href)
        assert run.page.locator("section.step").count() >= 1 and not run.errors
        run.page.context.close()
    phone = open_page(browser, out.as_uri(), width=390, height=844).page
    cards = phone.evaluate("() => [...document.querySelectorAll('table.summary tr')].slice(1).map(r => "
                           "[getComputedStyle(r).display, r.getBoundingClientRect().width])")
    assert cards and all(display == "block" and width <= 390 for display, width in cards)  # a card per method
    wrap = phone.locator(".tablewrap").first
    assert wrap.evaluate("w => w.scrollWidth <= w.clientWidth")  # nothing to scroll sideways
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
    assert str(tmp_path) not in page.inner_text("body")  # the dataset relative to the bench folder
    assert not watched.errors and all(url.startswith(("file:", "data:")) for url in watched.requests)
    for href in hrefs:  # each run's mark opens that run's own page
        assert href.endswith(".html") and Path(href.removeprefix("file://")).is_file(), href
        run = open_page(browser, href)
        assert run.page.locator("section.step").count() >= 1 and run.page.title().startswith("swarm-tui · ")
        assert not run.errors
        run.page.context.close()
    widths = photograph(browser, report.as_uri(), shots, "bench-report")
    assert widths[1] <= 390


@pytest.mark.parametrize("scripts", [True, False])
def test_a_200_kb_reply_is_folded_the_page_stays_short_and_opens_in_full(browser: Any, tmp_path: Path,
                                                                          shots: Path, scripts: bool) -> None:
    session = long_reply_session()
    reply = next(o.public for o in session.rounds[1].outputs if len(o.public) == LONG_REPLY)
    last_line = reply.splitlines()[-1]
    page_file = _export(session, tmp_path, "long")
    for width, height in ((1280, 800), (390, 844)):
        page = open_page(browser, page_file.as_uri() + "#step-2", width=width, height=height, scripts=scripts).page
        tall = page.evaluate("() => document.documentElement.scrollHeight")
        assert tall < 20_000, (width, tall)
        fold = page.locator("section#step-2 details.fold").first
        assert f"{len(reply.splitlines()):,} lines, 200 KB" in fold.locator("summary").inner_text()
        fold.locator("summary").click()
        assert last_line in fold.inner_text()  # nothing was cut: the whole reply is in the page
        assert page.evaluate("() => document.documentElement.scrollHeight") > 20_000
        page.context.close()
    if scripts:
        photograph(browser, page_file.as_uri() + "#step-2", shots, "long-reply")


def test_a_math_page_typesets_its_latex_as_mathml(browser: Any, tmp_path: Path, shots: Path) -> None:
    page_file = tmp_path / "math.html"
    assert main(["export", str(EXAMPLES_DIR / "example-math.json"), "--format", "html", "-o", str(page_file)]) == 0
    for scripts in (True, False):
        watched = open_page(browser, page_file.as_uri(), scripts=scripts)
        page = watched.page
        assert page.locator("header h1 math mfrac").count() == 1  # the problem's $f(x) = \frac{3x-2}{x-2}$
        answer = page.locator("header .math.display math")
        assert answer.count() == 1 and answer.evaluate("m => m.getBoundingClientRect().height") > 20  # stacked
        assert "\\frac" not in page.inner_text("body")
        assert not watched.errors and all(url.startswith("file:") for url in watched.requests)
        page.context.close()
    photograph(browser, page_file.as_uri(), shots, "math")


VISIBLE_STEPS = ("() => [...document.querySelectorAll('section.step')].filter(s => s.offsetParent !== null)"
                 ".map(s => s.dataset.step)")


def test_a_hash_set_after_load_shows_that_step_and_card_and_print_shows_every_step(browser: Any,
                                                                                    tmp_path: Path) -> None:
    page_file = _export(hostile_session(), tmp_path, "anchors")
    watched = open_page(browser, page_file.as_uri())
    page = watched.page
    assert page.evaluate(VISIBLE_STEPS) == ["1"]
    page.evaluate("() => { location.hash = '#step-3'; }")
    page.wait_for_function("() => document.querySelector('.stepper .where').textContent === 'round 3 of 3'")
    assert page.evaluate(VISIBLE_STEPS) == ["3"]
    page.evaluate("() => { location.hash = '#step-2-Tester'; }")  # a card's permalink, followed at any time
    page.wait_for_function("() => document.querySelector('.stepper .where').textContent === 'round 2 of 3'")
    card = page.locator("#step-2-Tester")
    assert card.is_visible() and card.evaluate("c => c.dataset.agent") == "Tester"
    top = card.evaluate("c => c.getBoundingClientRect().top")
    assert 0 <= top < 800  # scrolled to, below the step bar
    assert card.locator("a.permalink").get_attribute("href") == "#step-2-Tester"
    message = page.locator("[id^='step-2-Tester-from-']").first
    page.evaluate("id => { location.hash = '#' + id; }", message.get_attribute("id"))
    page.wait_for_function("id => document.getElementById(id).open", arg=message.get_attribute("id"))
    page.emulate_media(media="print")
    assert page.evaluate(VISIBLE_STEPS) == ["1", "2", "3"]
    assert not page.locator(".stepper").is_visible()
    assert not watched.errors
    plain = open_page(browser, page_file.as_uri() + "#step-3", scripts=False).page  # the same anchors, no script
    assert plain.evaluate("() => document.getElementById('step-3').getBoundingClientRect().top") < 100


def test_stepping_brings_the_steps_graph_and_goal_into_view(browser: Any, tmp_path: Path) -> None:
    page_file = _export(hostile_session(), tmp_path, "in-view")
    for width, height in ((1280, 800), (390, 844)):
        page = open_page(browser, page_file.as_uri(), width=width, height=height).page
        page.click(".stepper .next")
        graph = page.locator("section.step.on svg.graph").evaluate("g => g.getBoundingClientRect().toJSON()")
        bar = page.locator(".stepper").evaluate("n => n.getBoundingClientRect().bottom")
        assert bar <= graph["top"] and graph["bottom"] <= height, (width, graph)
        if width > 760:  # beside the outputs: still in view after scrolling down through them
            goal = page.locator("section.step.on h3", has_text="Goal").evaluate("h => h.getBoundingClientRect().top")
            assert bar <= goal < height
            page.mouse.wheel(0, 900)
            page.wait_for_timeout(200)
            graph = page.locator("section.step.on svg.graph").evaluate("g => g.getBoundingClientRect().toJSON()")
            assert bar <= graph["top"] and graph["bottom"] <= height
        page.context.close()


CROSSINGS = """() => [...document.querySelectorAll('section.step svg.graph')].flatMap(svg => {
  const boxes = [...svg.querySelectorAll('g.node')].map(n => [n.dataset.name, n.querySelector('rect').getBBox()]);
  return [...svg.querySelectorAll('g.edge, g.edge-removed')].flatMap(g => {
    const path = g.querySelector('path'), total = path.getTotalLength(), hits = [];
    for (let i = 1; i < 100; i++) {
      const p = path.getPointAtLength(total * i / 100);
      for (const [name, r] of boxes) {
        if (name !== g.dataset.src && name !== g.dataset.dst && p.x > r.x + 1 && p.x < r.x + r.width - 1
            && p.y > r.y + 1 && p.y < r.y + r.height - 1) hits.push([g.dataset.src, g.dataset.dst, name]);
      }
    }
    return hits;
  });
})"""


LABEL_OVERLAPS = """() => [...document.querySelectorAll('section.step svg.graph')].flatMap(svg => {
  const labels = [...svg.querySelectorAll('g.edge > text, g.edge-removed > text')]
    .map(t => [t.textContent, t.getBBox()]);
  const boxes = [...svg.querySelectorAll('g.node rect')].map(r => ['node', r.getBBox()]);
  const meet = (a, b) => a.x < b.x + b.width - 1 && b.x < a.x + a.width - 1 && a.y < b.y + b.height - 1
    && b.y < a.y + a.height - 1;
  return labels.flatMap(([text, box], i) => [...labels.slice(i + 1), ...boxes]
    .filter(([, other]) => meet(box, other)).map(([name]) => [text, name]));
})"""


@pytest.mark.parametrize("strategy", ["topoweaver", "topodim", "dytopo"])
def test_no_edge_is_drawn_through_another_agents_box(browser: Any, tmp_path: Path, strategy: str) -> None:
    saved = tmp_path / f"{strategy}.json"
    with ThreadPoolExecutor(1) as pool:  # the run has its own asyncio loop; Playwright's sync API runs one here
        assert pool.submit(main, ["--demo", "--headless", "--strategy", strategy, "--save", str(saved)]).result() == 0
    out = tmp_path / f"{strategy}.html"
    assert main(["export", str(saved), "--format", "html", "-o", str(out)]) == 0
    page = open_page(browser, out.as_uri()).page
    page.emulate_media(media="print")  # every step shows, so every path has a length
    if strategy == "topoweaver":  # the cross edge of turn 2: coder_1's own earlier turn, past tester_1
        assert page.locator("g.edge[data-src='coder_1@1'][data-dst='coder_1']").count() >= 1
    assert page.evaluate(CROSSINGS) == []
    page.evaluate("() => { document.getElementById('show-removed').checked = true; }")
    assert page.evaluate(LABEL_OVERLAPS) == []  # with the removed edges shown, no label covers another or a node


def test_search_finds_a_text_in_every_step_and_each_card_diffs_against_the_step_before(browser: Any,
                                                                                       tmp_path: Path) -> None:
    events = hostile_session().events
    word = "Zanzibarquux"  # said once, by one agent in round 3
    third = next(e for e in events if e["type"] == "agent_finished" and e.get("round") == 3 and e["call"] == "work")
    third["public"] += f"\nOne more thing: {word}."
    page_file = _export(Session(events), tmp_path, "search")
    watched = open_page(browser, page_file.as_uri())
    page = watched.page
    page.fill(".stepper .search input", word)
    found = page.locator(".stepper .found button")
    assert [b.inner_text().split(" (")[0] for b in found.all()] == ["round 3"]  # (the card, and its diff)
    found.first.click()
    assert page.inner_text(".stepper .where") == "round 3 of 3" and page.evaluate(VISIBLE_STEPS) == ["3"]
    page.fill(".stepper .search input", "window.__pwned")  # hostile text is searched as text, never run
    assert "round 2" in [b.inner_text().split(" (")[0] for b in found.all()]  # the reply, and round 2's goal
    page.click(".stepper .all")  # every step on the page: the browser's own find sees them all
    assert page.evaluate(VISIBLE_STEPS) == ["1", "2", "3"]
    page.click(".stepper .all")
    assert page.evaluate(VISIBLE_STEPS) == ["3"]
    diff = page.locator("section.step.on .card.output details.diff").first
    diff.locator("summary").click()
    assert diff.locator("pre.diff .add, pre.diff .del").count() >= 1
    assert "changes since round 2" in diff.locator("summary").inner_text()
    assert page.evaluate("() => window.__pwned === undefined") and not watched.errors
