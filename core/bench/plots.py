"""The benchmark report's plots, PNG and SVG, drawn with matplotlib's Agg backend (no display needed).

* accuracy_vs_tokens: each method's accuracy (95% interval as error bars) against its mean tokens per
  run, the Pareto front (no other method is both cheaper and more accurate) drawn through its points;
* pass_fail: the method × problem grid (share of a problem's runs solved);
* tokens: the distribution of tokens per run of each method.

The only module that imports matplotlib.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: files only, never a window

import matplotlib.pyplot as plt
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure

from core.bench.report_text import cell_mark

# The report's types (core.bench.report.Report, MethodStats) are written as Any here: report imports this
# module, and the packages' import graph stays acyclic (import-linter).
Report = Any
MethodStats = Any
DPI = 120


def pareto_front(methods: list[MethodStats]) -> list[MethodStats]:
    """Methods no other method dominates (fewer or equal tokens and higher or equal accuracy, one strictly),
    sorted by tokens."""
    def tokens(m: MethodStats) -> float:
        return float(m.prompt_tokens + m.completion_tokens)

    front = [
        m for m in methods
        if not any(
            tokens(o) <= tokens(m) and o.accuracy >= m.accuracy and (tokens(o) < tokens(m) or o.accuracy > m.accuracy)
            for o in methods
        )
    ]
    return sorted(front, key=tokens)


# SVG text stays text (searchable, sharp at any size, in the reader's sans-serif), not glyph outlines.
SVG_STYLE: dict[str, Any] = {"svg.fonttype": "none", "font.family": ["DejaVu Sans", "sans-serif"]}
# Light cells, so a dark mark reads on every one of them; the report page keeps them in dark mode too.
SOLVED = LinearSegmentedColormap.from_list("solved", ["#f3a5a5", "#f6e3a0", "#a7d99f"])
MARK = "#111111"  # marks drawn in this colour keep it on the page (report_html recolours only black)
FONT = 10  # points: the report page shows a plot at about 0.8 of its size on a phone (core.bench.report_html)


def _save(fig: Figure, out: Path, stem: str) -> list[Path]:
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=DPI, bbox_inches="tight")
    with matplotlib.rc_context(SVG_STYLE):  # type: ignore[arg-type]  # its keys are typed as a Literal
        fig.savefig(paths[1], bbox_inches="tight")
    plt.close(fig)
    return paths


def _accuracy_vs_tokens(report: Report, out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, m in enumerate(report.methods):
        x = m.prompt_tokens + m.completion_tokens
        ax.errorbar(
            x, 100 * m.accuracy, yerr=[[100 * (m.accuracy - m.low)], [100 * (m.high - m.accuracy)]],
            fmt="o", capsize=4, label=m.label,
        )
        # Staggered, so the labels of close points do not print over each other.
        ax.annotate(m.label, (x, 100 * m.accuracy), textcoords="offset points", xytext=(6, 4 - 11 * (i % 3)),
                    fontsize=9)
    front = pareto_front(report.methods)
    if len(front) > 1:
        ax.plot(
            [m.prompt_tokens + m.completion_tokens for m in front], [100 * m.accuracy for m in front],
            "--", color="grey", linewidth=1, label="Pareto front",
        )
    ax.set_xlabel("mean tokens per problem (prompt + completion)")
    ax.set_ylabel("accuracy, % (95% interval)")
    ax.set_ylim(-5, 105)
    ax.set_xlim(left=0)
    ax.margins(x=0.15)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="lower right")
    ax.set_title("Accuracy vs tokens")
    return _save(fig, out, "accuracy_vs_tokens")


def _pass_fail(report: Report, out: Path) -> list[Path]:
    """The method × problem grid: each cell bordered and marked (✓ ✗ k/n ·), its colour the share solved, so
    the grid reads without colour too."""
    labels = [m.label for m in report.methods]
    cells = [[report.cells.get(label, {}).get(task, (0, 0)) for task in report.problems] for label in labels]
    grid = [[solved / runs if runs else float("nan") for solved, runs in row] for row in cells]
    n = len(report.problems)
    marked = n <= 40  # past that a mark would be smaller than a letter: the borders and colours stay
    width = min(16, max(5, (0.32 if marked else 0.12) * n + 2.5))
    fig, ax = plt.subplots(figsize=(width, 0.45 * len(labels) + 1.8))
    # Problem k's column is centred on k (1-based, as the axis label says); white lines part the cells.
    xs = [k + 0.5 for k in range(n + 1)]
    ys = [r - 0.5 for r in range(len(labels) + 1)]
    image = ax.pcolormesh(xs, ys, grid, cmap=SOLVED, vmin=0, vmax=1, edgecolors="white",
                          linewidth=1.5 if marked else 0.4)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    if marked:
        for r, row in enumerate(cells):
            for k, (solved, runs) in enumerate(row, start=1):
                ax.text(k, r, cell_mark(solved, runs), ha="center", va="center", fontsize=FONT, color=MARK)
    ax.set_yticks(range(len(labels)), labels, fontsize=FONT)
    if marked:
        ax.set_xticks(range(1, n + 1), report.problems, rotation=90, fontsize=FONT - 1)
    else:
        ax.set_xlabel(f"problems (1..{len(report.problems)}, in dataset order)")
    fig.colorbar(image, ax=ax, label="share of runs solved", fraction=0.03)
    ax.set_title("Pass / fail per problem (✓ solved, ✗ not, k/n over repeats, · not run)", fontsize=FONT)
    return _save(fig, out, "pass_fail")


def _tokens(report: Report, out: Path) -> list[Path]:
    labels = [m.label for m in report.methods if report.tokens.get(m.label)]
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(labels) + 2), 4))
    ax.boxplot([report.tokens[label] for label in labels], tick_labels=labels, showmeans=True)
    ax.set_ylabel("tokens per run (prompt + completion)")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Tokens per problem")
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    return _save(fig, out, "tokens")


def draw_plots(report: Report, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    return [*_accuracy_vs_tokens(report, out), *_pass_fail(report, out), *_tokens(report, out)]
