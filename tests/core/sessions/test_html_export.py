"""The HTML export: one self-contained page per session, comparison and benchmark, model text shown as text,
every method's graphs drawn with the edges the session recorded. The browser tier (tests/browser) opens the
same pages in Chromium."""

from __future__ import annotations

import copy
import html
import re
import shutil
import unicodedata
from pathlib import Path

import pytest

from core.bench.report import write_report
from core.sessions.export import export_session
from core.sessions.html.page import SCRIPT, SCRIPT_HASH, visible
from core.sessions.model import Session
from core.sessions.store import load_session
from sessions import EXAMPLES_DIR
from tests.support.bench import HUMANEVAL, bench
from tests.support.html import (
    EXAMPLE,
    HOSTILE,
    LONG_REPLY,
    drawn_edges,
    hostile_session,
    long_reply_session,
    steered_session,
)
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
    assert "Steering before" not in page.split("</header>", 1)[0]  # round 2's actions are listed in round 2 only
    assert page.count("pin Tester→Developer — ") == 1


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
    shutil.copytree(COMPARE.parent, tmp_path / "record")  # each method's page is written beside its session
    record = tmp_path / "record" / COMPARE.name
    compared = tmp_path / "pages" / "compare.html"
    compared.parent.mkdir()
    assert main(["export", str(record), "--format", "html", "-o", str(compared)]) == 0
    page = compared.read_text(encoding="utf-8")
    _self_contained(page)
    summary = page.split('<table class="summary">', 1)[1].split("</table>", 1)[0]
    methods = re.findall(r'<div class="column" data-method="([^"]+)"', page)
    assert methods and all(f">{m}</a>" in summary for m in methods)
    assert summary.count('data-label="end"') == len(methods)  # each cell names its column (a phone's card)
    own = dict(re.findall(r'<h2 id="col-([^"]+)">[^<]*<a class="own" href="([^"]+)"', page))
    assert sorted(own) == sorted(methods)
    for href in own.values():  # relative to the page, to the method's own session page
        assert href.startswith("../record/") and "<section class=\"step\"" in (compared.parent / href).read_text()
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
    for href, _ in links:  # each run's own page, written beside its session
        assert href.endswith(".html") and (tmp_path / href).is_file(), href
        assert (tmp_path / href).with_suffix(".json").is_file()
        assert "<section class=\"step\"" in (tmp_path / href).read_text(encoding="utf-8")
    assert str(tmp_path) not in page and "humaneval.jsonl (shipped)" in page


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
    listed = sum(part.split("</ul>", 1)[0].count("<li>") for part in page.split('<ul class="steering">')[1:])
    assert listed == len(session.steering)  # each action once: before the first round, or in its own round


def test_a_reply_longer_than_a_screen_is_folded_with_its_first_lines_and_size_and_kept_whole() -> None:
    session = long_reply_session()
    reply = next(o.public for o in session.rounds[1].outputs if len(o.public) == LONG_REPLY)
    page = export_session(session, "html")
    folds = re.findall(r'<details class="fold"><summary><span class="peek">(.*?)</span>'
                       r'<span class="more">(.*?)</span></summary>', page, re.DOTALL)
    assert len(folds) >= 1
    peek, more = folds[0]
    assert peek.splitlines()[0] == reply.splitlines()[0] and len(peek.splitlines()) == 5
    assert more == f"show all · {len(reply.splitlines()):,} lines, 200 KB"
    assert reply.splitlines()[-1] in page  # folded, not cut
    short = export_session(load_session(EXAMPLE), "html")
    assert '<details class="fold">' not in short  # the demo's replies fit a screen


def test_latex_is_typeset_as_mathml_and_what_does_not_convert_safely_stays_text() -> None:
    page = export_session(load_session(EXAMPLES_DIR / "example-math.json"), "html")
    assert '<span class="math" title="f(x) = \\frac{3x-2}{x-2}"><math display="inline">' in page
    assert '<div class="math display" title="\\frac{14}{3}"><math display="block">' in page  # the bare answer
    hostile = Session([*_with_reply(r"costs $5 and $10; $\text{<script>x</script>}$ $\href{https://e.invalid}{y}$ "
                                    r"$\nosuchcommand{z}$ \boxed{\frac{1}{2}}")])
    html = export_session(hostile, "html")
    _self_contained(html)
    assert "costs $5 and $10;" in html and "<script>x" not in html and "e.invalid" not in html.split("title=")[0]
    assert "$\\text{&lt;script&gt;x&lt;/script&gt;}$" in html  # not converted safely: the source, escaped
    assert "$\\nosuchcommand{z}$" in html
    assert 'title="\\boxed{\\frac{1}{2}}"><math display="inline"><mrow><menclose notation="box">' in html
    tags = re.findall(r"<[a-zA-Z][^>]*>", html)
    assert not [t for t in tags if re.search(r"\shref=", t) and not t.startswith("<a ")]  # \\href is not a link


def _with_reply(text: str) -> list[dict[str, object]]:
    events = copy.deepcopy(load_session(EXAMPLE).events)
    next(e for e in events if e["type"] == "agent_finished" and e.get("call") == "work")["public"] = text
    return events


def test_controls_and_invisible_format_characters_show_as_marks_and_forms_and_base_are_refused() -> None:
    hidden = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    hidden += [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in "\t\n\r"]
    assert all(visible(c) != c for c in hidden)
    reply = "save it as report\u202etxt.exe\n```python\nprint('\x1b[2J\x07\x08\u2066x\u2069')\n```"
    page = export_session(Session(_with_reply(reply)), "html")
    assert not [c for c in hidden if c in page]
    assert "report⟨U+202E⟩txt.exe" in page and "␛[2J␇␈" in page and "⟨U+2066⟩x⟨U+2069⟩" in page
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp and "form-action 'none'" in csp[1] and "base-uri 'none'" in csp[1] and "default-src 'none'" in csp[1]


def test_a_broadcast_round_draws_every_worker_to_every_other_apart_from_the_routed_edges() -> None:
    session = load_session(EXAMPLE)
    page = export_session(session, "html")
    first = page.split('<section class="step" data-step="1"', 1)[1].split("</section>", 1)[0]
    workers = session.metadata.workers
    drawn = set(re.findall(r'<g class="edge-broadcast" data-src="([^"]+)" data-dst="([^"]+)"', first))
    assert session.rounds[0].broadcast and drawn == {(a, b) for a in workers for b in workers if a != b}
    assert f"({len(drawn)} edges)" in first


def test_a_timeline_per_step_and_for_the_run_shows_each_agents_calls_and_tokens() -> None:
    session = load_session(EXAMPLE)
    page = export_session(session, "html")
    header = page.split("</header>", 1)[0]
    run = header.split('<details class="timeline">', 1)[1].split("</details>", 1)[0]
    finished = [e for e in session.events if e["type"] == "agent_finished"]
    agents = list(dict.fromkeys(e["agent"] for e in finished))
    names = re.findall(r'<div class="wf-row"><span class="wf-name">([^<]+)</span>', run)
    assert names == agents
    prompt = sum(int(p.replace(",", "")) for p in re.findall(r'<span class="wf-tok">([\d,]+)', run))
    assert prompt == sum(e["prompt_tokens"] for e in finished)
    assert run.count("<rect ") == len(finished)  # one bar per call
    second = page.split('<section class="step" data-step="2"', 1)[1].split("</section>", 1)[0]
    step = second.split('<details class="timeline" open>', 1)[1].split("</details>", 1)[0]
    assert step.count('<div class="wf-row">') == len(session.rounds[1].outputs)
    xs = [float(x) for x in re.findall(r'<rect class="ok" x="([\d.]+)"', step)]
    assert min(xs) == 0.0 and max(xs) < 1000  # on the step's own axis
    work = session.rounds[1].output("Developer", "work")
    assert work is not None and f"· {work.latency_s * 1000:.0f} ms" in second  # not "0.0 s"


def test_each_card_diffs_its_output_against_the_same_agents_call_in_the_step_before() -> None:
    session = load_session(EXAMPLE)
    page = export_session(session, "html")
    second = page.split('<section class="step" data-step="2"', 1)[1].split("</section>", 1)[0]
    card = second.split('id="step-2-Developer" data-agent="Developer">', 1)[1].split('<div class="card', 1)[0]
    before, after = (r.output("Developer", "work") for r in session.rounds[:2])
    assert before is not None and after is not None and before.public != after.public
    diff = card.split('<details class="diff">', 1)[1].split("</details>", 1)[0]
    assert "changes since round 1" in diff
    added = re.findall(r'<span class="add">(.*?)</span>', diff)
    assert added and all(html.unescape(line) in after.public.splitlines() for line in added)
    removed = re.findall(r'<span class="del">(.*?)</span>', diff)
    assert all(html.unescape(line) in before.public.splitlines() for line in removed)
    first = page.split('<section class="step" data-step="1"', 1)[1].split("</section>", 1)[0]
    assert 'class="diff"' not in first  # nothing before the first step
