"""The HTML export: one self-contained page per session, comparison and benchmark, model text shown as text,
every method's graphs drawn with the edges the session recorded. The browser tier (tests/browser) opens the
same pages in Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.bench.report import write_report
from core.sessions.export import export_session
from core.sessions.html.page import SCRIPT, SCRIPT_HASH
from core.sessions.store import load_session
from tests.support.bench import HUMANEVAL, bench
from tests.support.html import EXAMPLE, HOSTILE, drawn_edges, hostile_session, steered_session
from tests.support.paths import FIXTURES
from tui.entry import main

COMPARE = FIXTURES / "compare" / "demo-math.compare.json"
# Anything that would make the browser load something: an address in an attribute, an import, a url().
_FETCH = re.compile(
    r"""(?:src|href|action|poster|xlink:href)\s*=\s*["']?\s*(?:https?:)?//|@import|url\(\s*['"]?(?:https?:)?//""",
    re.IGNORECASE)


def _self_contained(page: str) -> None:
    tags = re.findall(r"<[a-zA-Z][^>]*>", page)  # model text has no "<" left: these are the page's own tags
    assert not [t for t in tags if _FETCH.search(t)]
    styles = " ".join(re.findall(r"<style>(.*?)</style>", page, re.DOTALL))
    assert not _FETCH.search(styles)
    assert page.count("<script") == 1 or (page.count("<script") == 0 and SCRIPT not in page)
    assert f"script-src '{SCRIPT_HASH}'" in page  # only our own script may run, whatever got into the page


def test_a_hostile_reply_is_text_not_markup() -> None:
    page = export_session(hostile_session(), "html")
    _self_contained(page)
    assert HOSTILE not in page and "window.__pwned" in page  # there, but only as escaped text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;&lt;/svg&gt;" in page
    tags = re.findall(r"<[a-zA-Z][^>]*>", page)
    assert not [t for t in tags if t.startswith("<img") or re.search(r"\son\w+\s*=", t)]
    assert page.count("</svg>") == page.count("<svg")  # no reply closed a drawing early


def test_every_round_draws_the_edges_the_session_recorded() -> None:
    session = load_session(EXAMPLE)
    edges = drawn_edges(export_session(session, "html"))
    for record in session.rounds:
        expected = {(e.src, e.dst, e.kind, f"{e.score:.2f}") for e in record.edges}
        assert edges.kept.get(record.round, set()) == expected, record.round
        assert edges.removed.get(record.round, set()) == {(r.src, r.dst, r.reason) for r in record.removed}
    assert edges.kept[2]  # round 2 is routed (round 1 broadcasts)


def test_pinned_and_cut_edges_and_the_steering_actions_show() -> None:
    page = export_session(steered_session(), "html")
    edges = drawn_edges(page)
    assert ("Tester", "Developer", "pinned", "0.12") in edges.kept[2]
    assert ("Developer", "Tester", "cut by user") in edges.removed[2]
    assert 'class="edge-removed cut"' in page and "pin 0.12" in page
    steering = page.split('<ul class="steering">', 1)[1].split("</ul>", 1)[0]
    assert "pin Tester→Developer — <span class=\"ok\">taken" in steering and "cut Developer→Tester" in steering


def test_a_three_round_demo_page_stays_small() -> None:
    session = load_session(EXAMPLE)
    assert len(session.rounds) == 3
    size = len(export_session(session, "html").encode())
    assert size <= 300_000, size


def test_the_page_reads_without_scripts_every_round_in_order() -> None:
    page = export_session(load_session(EXAMPLE), "html")
    steps = [int(n) for n in re.findall(r'<section class="step" data-step="(\d+)"', page)]
    assert steps == [1, 2, 3]
    assert "html.js [data-step]:not(.on){display:none}" in page  # only a script hides rounds


@pytest.mark.parametrize(("strategy", "unit"), [
    ("chain", "Round"), ("topodim", "Step"), ("dmoa", "Step"), ("topoweaver", "Turn"), ("single", "Call"),
])
def test_every_method_exports_its_own_graphs_in_its_own_unit(strategy: str, unit: str, tmp_path: Path) -> None:
    saved = tmp_path / f"{strategy}.json"
    assert main(["--demo", "--headless", "--strategy", strategy, "--save", str(saved)]) == 0
    session = load_session(saved)
    page = export_session(session, "html")
    _self_contained(page)
    edges = drawn_edges(page)
    for record in session.rounds:
        assert f'data-step="{record.round}"' in page
        assert re.search(rf"<h2>{unit} {record.round} ", page), (unit, record.round)
        assert edges.kept.get(record.round, set()) == {(e.src, e.dst, e.kind, f"{e.score:.2f}")
                                                       for e in record.edges}
        if record.routing is not None:
            for name in record.routing.inactive:  # DMoA's unselected agents, TopoWeaver's earlier turn
                assert f'class="node inactive" data-name="{name}"' in page
    if strategy == "single":
        assert "one agent: no topology" in page


def test_export_command_writes_a_session_page_and_a_comparison_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run.html"
    assert main(["export", str(EXAMPLE), "--format", "html", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    compared = tmp_path / "compare.html"
    assert main(["export", str(COMPARE), "--format", "html", "-o", str(compared)]) == 0
    page = compared.read_text(encoding="utf-8")
    _self_contained(page)
    summary = page.split('<table class="summary">', 1)[1].split("</table>", 1)[0]
    methods = re.findall(r'<div class="column" data-method="([^"]+)"', page)
    assert methods and all(f">{m}</a>" in summary for m in methods)
    assert main(["export", str(COMPARE), "--format", "csv", "-o", str(tmp_path / "c.csv")]) == 0
    capsys.readouterr()
    assert main(["export", str(EXAMPLE), "--format", "csv"]) == 2
    err = capsys.readouterr().err.strip()
    assert "compare records" in err and len(err.splitlines()) == 1


def test_bench_report_html_inlines_its_plots_and_links_every_run(tmp_path: Path) -> None:
    assert bench(tmp_path, HUMANEVAL, "--demo", "--limit", "2", "--strategy", "single,chain") == 0
    written = write_report([tmp_path])
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert tmp_path / "report.html" in written
    _self_contained(page)
    assert page.count("<svg") >= 3 and "<?xml" not in page and "<metadata>" not in page
    links = re.findall(r'<a href="([^"]+)" title="([^"]+)"', page)
    assert len(links) == 4  # 2 problems x 2 methods, one run each
    for href, _ in links:
        assert (tmp_path / href).is_file(), href


def test_a_run_steered_from_a_control_file_exports_its_pins_cuts_and_actions(tmp_path: Path) -> None:
    control = tmp_path / "steer.jsonl"
    control.write_text('{"action": "pin", "src": "Tester", "dst": "Designer"}\n'
                       '{"action": "cut", "src": "Developer", "dst": "Tester"}\n', encoding="utf-8")
    saved = tmp_path / "steered.json"
    assert main(["--demo", "--headless", "--control", str(control), "--save", str(saved)]) == 0
    session = load_session(saved)
    page = export_session(session, "html")
    edges = drawn_edges(page)
    for record in session.rounds[1:]:  # routed rounds: the pin holds and the cut stays out in each
        assert ("Tester", "Designer") in {(src, dst) for src, dst, kind, _ in edges.kept[record.round]
                                          if kind == "pinned"}
        assert ("Developer", "Tester", "cut by user") in edges.removed[record.round]
    header = page.split("</header>", 1)[0]
    assert "Steering before the first round" in header and "pin Tester→Designer" in header
