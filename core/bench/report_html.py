"""The benchmark report as one HTML page (report.html): the same tables as report.md, the plots inline as
SVG (matplotlib's SVG backend, core.bench.plots) and, per problem, a link to each of its runs' sessions.

The page needs nothing beside it but the session files it links to (relative links, so the folder can move).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.sessions.html.page import document, esc

# core.bench.report.Report, written as Any: report imports this module to write the page, and the package's
# import graph stays acyclic (import-linter), as for core.bench.plots.
Report = Any

_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.DOTALL)  # the XML declaration and DOCTYPE before <svg>
_METADATA = re.compile(r"<metadata>.*?</metadata>", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def inline_svg(text: str) -> str:
    """A matplotlib SVG file as an element of the page: no prolog, no metadata, no comments."""
    return _COMMENT.sub("", _METADATA.sub("", _PROLOG.sub("", text, count=1)))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _table(header: list[str], rows: list[list[str]], numeric: frozenset[int] = frozenset()) -> str:
    """Cells already HTML. ``numeric``: columns aligned right."""
    head = "".join(f"<th{' class=num' if i in numeric else ''}>{esc(h)}</th>" for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(f"<td{' class=num' if i in numeric else ''}>{c}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f'<div class="tablewrap"><table><tr>{head}</tr>{body}</table></div>'


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


def _runs(report: Report, out: Path) -> dict[tuple[str, str], list[tuple[str, bool]]]:
    """(method label, problem) -> [(link to a run's session, solved)], relative to the report's folder."""
    several = report.several_models
    found: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for folder in report.folders:
        for row in folder.rows:
            label = f"{folder.model}/{row.strategy}" if several else row.strategy
            link = ""
            if row.session:
                link = Path(os.path.relpath(folder.path / row.session, out)).as_posix()
            found.setdefault((label, row.task_id), []).append((link, bool(row.correct)))
    return found


def _per_problem(report: Report, out: Path) -> str:
    labels = [m.label for m in report.methods]
    runs = _runs(report, out)
    rows = []
    for task in report.problems:
        cells = [f'<span id="p-{esc(task)}">{esc(task)}</span>']
        for label in labels:
            marks = []
            for n, (link, solved) in enumerate(runs.get((label, task), []), start=1):
                mark = f'<span class="{"ok" if solved else "bad"}">{"✓" if solved else "✗"}</span>'
                title = f"{label} on {task}" + (f", run {n}" if n > 1 else "") + ": its session"
                marks.append(f'<a href="{esc(link)}" title="{esc(title)}">{mark}</a>' if link else mark)
            cells.append(" ".join(marks) or '<span class="mute">·</span>')
        rows.append(cells)
    return ("<h2>Per problem</h2><p class=legend>✓ solved, ✗ not; each mark links to that run's session "
            "(open it with <code>swarm-tui replay</code>, or make a page of it with "
            "<code>swarm-tui export FILE --format html</code>); · not run.</p>"
            + _table(["problem", *labels], rows))


def render_html(report: Report, out: Path, plots: Mapping[str, str] | None = None) -> str:
    """The page. ``plots``: stem -> SVG text (the files core.bench.plots wrote)."""
    setup = []
    for folder in report.folders:
        meta = folder.meta
        bits = ", ".join(f"{k} {meta[k]}" for k in ("dataset", "problems", "repeats", "seed", "base_url")
                         if meta.get(k) is not None)
        setup.append(f"<li><code>{esc(folder.path)}</code>: model <b>{esc(folder.model)}</b>"
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
    body.append(_per_problem(report, out))
    return document("swarm-tui · benchmark report", "".join(body), steps=False)
