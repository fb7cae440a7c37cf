"""The benchmark report as one HTML page (report.html): the same tables as report.md, the plots inline as
SVG (matplotlib's SVG backend, core.bench.plots) and, per problem, a link to each of its runs' sessions.

The page needs nothing beside it but the run pages and session files it links to (relative links, so the folder
can move).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.bench.report_text import setup_line
from core.sessions.html.page import document, esc

# core.bench.report.Report, written as Any: report imports this module to write the page, and the package's
# import graph stays acyclic (import-linter), as for core.bench.plots.
Report = Any

_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.DOTALL)  # the XML declaration and DOCTYPE before <svg>
_METADATA = re.compile(r"<metadata>.*?</metadata>", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


# matplotlib's black, white and legend grey become the page's colours, so a plot follows dark mode; the cells'
# marks (core.bench.plots.MARK) and the series' colours stay as drawn. Text has no colour of its own: the
# page's CSS gives it the page's.
_RECOLOUR = {"#000000": "var(--fg)", "#ffffff": "var(--bg)", "#cccccc": "var(--line)"}
_COLOUR = re.compile("|".join(_RECOLOUR))
_SVG_STYLE = re.compile(r"<style[^>]*>.*?</style>", re.DOTALL)  # matplotlib's "*{...}" would style the whole page


_WIDTH = re.compile(r'<svg\b[^>]*?\swidth="([\d.]+)pt"')
SMALLEST = 0.8  # a plot shrinks to at most this share of its drawn size (a phone scrolls it instead)


def inline_svg(text: str) -> str:
    """A matplotlib SVG file as an element of the page: no prolog, metadata, comments or page-wide style; its
    black and white the page's colours; never shrunk below SMALLEST of its size, so its text stays readable."""
    svg = _SVG_STYLE.sub("", _COMMENT.sub("", _METADATA.sub("", _PROLOG.sub("", text, count=1))))
    svg = _COLOUR.sub(lambda m: _RECOLOUR[m.group(0)], svg)
    width = _WIDTH.search(svg)
    if width:  # points to CSS pixels: 4/3
        svg = svg.replace("<svg ", f'<svg style="min-width:{float(width[1]) * 4 / 3 * SMALLEST:.0f}px" ', 1)
    return svg


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _table(header: list[str], rows: list[list[str]], numeric: frozenset[int] = frozenset(), css: str = "") -> str:
    """Cells already HTML. ``numeric``: columns aligned right."""
    head = "".join(f"<th{' class=num' if i in numeric else ''}>{esc(h)}</th>" for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(f"<td{' class=num' if i in numeric else ''}>{c}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    table = f'<table class="{css}">' if css else "<table>"
    return f'<div class="tablewrap">{table}<tr>{head}</tr>{body}</table></div>'


def _methods(report: Report) -> str:
    several = report.several_models
    header = (["model"] if several else []) + [
        "method", "solved", "accuracy", "95% interval", "prompt tok", "compl tok", "tok / solved", "acc / 1k tok",
        "calls", "wall s", "prompt cache", "cost"]
    rows = []
    for m in report.methods:
        rows.append(([esc(m.model)] if several else []) + [
            esc(m.strategy if several else m.label), f"{m.solved}/{m.runs}", _pct(m.accuracy),
            esc(f"[{_pct(m.low)}, {_pct(m.high)}] ({m.interval})"), f"{m.prompt_tokens:.0f}",
            f"{m.completion_tokens:.0f}", f"{m.tokens_per_solved:.0f}" if m.tokens_per_solved is not None else "—",
            f"{m.accuracy_per_1k_tokens:.3f}", f"{m.calls:.1f}", f"{m.wall_s:.2f}", esc(m.prompt_cache), esc(m.cost)])
    first = 1 if several else 0
    return _table(header, rows, numeric=frozenset(first + i for i in (1, 2, 4, 5, 6, 7, 8, 9)))


def _paired(report: Report) -> str:
    if not report.paired:
        return ""
    several = report.several_models
    header = (["model"] if several else []) + ["A", "B", "problems", "only A", "only B", "McNemar p", "A − B",
                                               "95% interval"]
    rows = [([esc(p.model)] if several else []) + [
        esc(p.a), esc(p.b), str(p.problems), str(p.only_a), str(p.only_b), f"{p.p_value:.3g}",
        f"{100 * p.difference:+.1f} pts", f"[{100 * p.low:+.1f}, {100 * p.high:+.1f}]"] for p in report.paired]
    return ("<h2>Paired comparisons</h2><p class=legend>Exact McNemar test on the discordant problems and the 95% "
            "paired bootstrap interval of the accuracy difference A − B, on the problems both ran.</p>"
            + _table(header, rows))


def _runs(report: Report, out: Path, pages: Mapping[Path, Path]) -> dict[tuple[str, str], list[tuple[str, bool]]]:
    """(method label, problem) -> [(link to a run's page, else its session file, solved)], relative to the
    report's folder."""
    several = report.several_models
    found: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for folder in report.folders:
        for row in folder.rows:
            label = f"{folder.model}/{row.strategy}" if several else row.strategy
            link = ""
            if row.session:
                target = pages.get(folder.path / row.session, folder.path / row.session)
                link = Path(os.path.relpath(target, out)).as_posix()
            found.setdefault((label, row.task_id), []).append((link, bool(row.correct)))
    return found


def _per_problem(report: Report, out: Path, pages: Mapping[Path, Path]) -> str:
    labels = [m.label for m in report.methods]
    runs = _runs(report, out, pages)
    rows = []
    for task in report.problems:
        cells = [f'<span id="p-{esc(task)}">{esc(task)}</span>']
        for label in labels:
            marks = []
            for n, (link, solved) in enumerate(runs.get((label, task), []), start=1):
                mark = f'<span class="mark {"ok" if solved else "bad"}">{"✓" if solved else "✗"}</span>'
                title = f"{label} on {task}" + (f", run {n}" if n > 1 else "") + (": solved" if solved else ": not")
                marks.append(f'<a href="{esc(link)}" title="{esc(title)}">{mark}</a>' if link else mark)
            cells.append(" ".join(marks) or '<span class="mute">·</span>')
        rows.append(cells)
    return ("<h2>Per problem</h2><p class=legend>✓ solved, ✗ not, · not run; each mark opens that run's page "
            "(its session file beside it replays with <code>swarm-tui replay</code>).</p>"
            + _table(["problem", *labels], rows, css="grid"))


def render_html(report: Report, out: Path, plots: Mapping[str, str] | None = None,
                pages: Mapping[Path, Path] | None = None) -> str:
    """The page. ``plots``: stem -> SVG text (the files core.bench.plots wrote); ``pages``: session file -> its
    page (core.sessions.html.beside), linked instead of the session."""
    setup = []
    for folder in report.folders:
        bits = setup_line(folder.meta, folder.path)
        name = folder.path.name if folder.path == out else Path(os.path.relpath(folder.path, out)).as_posix()
        setup.append(f"<li><code>{esc(name)}</code>: model <b>{esc(folder.model)}</b>"
                     + (f" ({esc(bits)})" if bits else "") + "</li>")
    body = ['<header><p><span class="badge">swarm-tui benchmark</span></p><h1>Benchmark report</h1>'
            f"<ul>{''.join(setup)}</ul></header>",
            "<h2>Methods</h2><p class=legend>Accuracy with its 95% interval (Wilson for one run per problem, "
            "a bootstrap over problems with repeats); tokens are means per run.</p>", _methods(report),
            _paired(report)]
    with_options = [m for m in report.methods if m.options]
    if with_options:
        items = "".join(f"<li>{esc(m.label)}: {esc(', '.join(f'{k}={v}' for k, v in sorted(m.options.items())))}"
                        "</li>" for m in with_options)
        body.append(f"<h2>Method options</h2><ul>{items}</ul>")
    if plots:
        figures = "".join(f'<figure class="plot" id="plot-{esc(stem)}">{inline_svg(svg)}</figure>'
                          for stem, svg in plots.items())
        body.append(f"<h2>Plots</h2><div class=\"plots\">{figures}</div>")
    body.append(_per_problem(report, out, pages or {}))
    return document("swarm-tui · benchmark report", "".join(body), steps=False)
