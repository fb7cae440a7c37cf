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
from matplotlib.figure import Figure

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


def _save(fig: Figure, out: Path, stem: str) -> list[Path]:
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=DPI, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    plt.close(fig)
    return paths


def _accuracy_vs_tokens(report: Report, out: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m in report.methods:
        x = m.prompt_tokens + m.completion_tokens
        ax.errorbar(
            x, 100 * m.accuracy, yerr=[[100 * (m.accuracy - m.low)], [100 * (m.high - m.accuracy)]],
            fmt="o", capsize=4, label=m.label,
        )
        ax.annotate(m.label, (x, 100 * m.accuracy), textcoords="offset points", xytext=(6, 4), fontsize=8)
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
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("Accuracy vs tokens")
    return _save(fig, out, "accuracy_vs_tokens")


def _pass_fail(report: Report, out: Path) -> list[Path]:
    labels = [m.label for m in report.methods]
    grid = [
        [
            (lambda c: c[0] / c[1] if c[1] else float("nan"))(report.cells.get(label, {}).get(task, (0, 0)))
            for task in report.problems
        ]
        for label in labels
    ]
    width = min(16, max(5, 0.12 * len(report.problems) + 2))
    fig, ax = plt.subplots(figsize=(width, 0.45 * len(labels) + 1.6))
    n = len(report.problems)
    image = ax.imshow(  # extent: problem k's column is centred on k (1-based, as the axis label says)
        grid, aspect="auto", cmap="RdYlGn", vmin=0, vmax=1, interpolation="nearest",
        extent=(0.5, n + 0.5, len(labels) - 0.5, -0.5),
    )
    ax.set_yticks(range(len(labels)), labels)
    if len(report.problems) <= 40:
        ax.set_xticks(range(1, n + 1), report.problems, rotation=90, fontsize=7)
    else:
        ax.set_xlabel(f"problems (1..{len(report.problems)}, in dataset order)")
    fig.colorbar(image, ax=ax, label="share of runs solved", fraction=0.03)
    ax.set_title("Pass / fail per problem")
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
