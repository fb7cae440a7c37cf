"""The benchmark report: per-method accuracy with 95% intervals and token costs, paired tests between
methods, the per-problem pass/fail table; written as report.md, report.json and report.html (core.bench.report_html;
plots: core.bench.plots).

Several result folders merge (e.g. one per model): each method is then labelled ``model/method`` and the
tables gain a ``model`` column. Paired tests compare methods of the same model on the problems both ran.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.bench.report_html import render_html
from core.bench.report_text import cell_mark, public_setup, setup_line
from core.bench.runner import ResultsLog, Row, prompt_cache, sweep_cost
from core.bench.stats import (
    bootstrap_accuracy,
    discordant_pairs,
    mcnemar_exact,
    paired_bootstrap_difference,
    wilson_interval,
)
from core.sessions.html.beside import write_pages

BASELINE = "single"


class ReportError(ValueError):
    """A folder holds no results; one line for the user."""


@dataclass
class Folder:
    path: Path
    model: str
    rows: list[Row]
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class MethodStats:
    label: str  # "dytopo", or "model/dytopo" when several models merge
    model: str
    strategy: str
    problems: int
    runs: int
    repeats: int
    solved: int
    accuracy: float
    low: float
    high: float
    interval: str  # "Wilson" | "bootstrap"
    prompt_tokens: float  # mean per run
    completion_tokens: float
    tokens_per_solved: float | None  # (prompt + completion) of all runs / runs solved
    accuracy_per_1k_tokens: float
    calls: float
    wall_s: float
    options: dict[str, Any] = field(default_factory=dict)
    rejected: int = 0  # runs whose code tried to pass with something other than plain data
    prompt_cache: str = ""  # "cached N (x %)" of the prompt tokens, or "not reported" (core.bench.runner)
    cost: str = "—"  # what the runs cost together (core.bench.runner.sweep_cost), "unknown (model X)" or "—"


@dataclass
class PairedTest:
    model: str
    a: str
    b: str
    problems: int
    only_a: int
    only_b: int
    p_value: float
    difference: float
    low: float
    high: float


def load_folder(path: Path) -> Folder:
    """A bench output folder: results.json (rows and setup) when the sweep finished, else results.jsonl."""
    path = Path(path)
    if not path.is_dir():
        raise ReportError(f"{path} is not a folder")
    meta: dict[str, Any] = {}
    summary_file = path / "results.json"
    if summary_file.exists():
        try:
            meta = json.loads(summary_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ReportError(f"{summary_file}: not readable JSON ({exc})") from None
    rows = ResultsLog(path / "results.jsonl").read()  # every finished row, even of a cut-short sweep
    if not rows and isinstance(meta.get("rows"), list):
        rows = [Row.from_dict(r) for r in meta["rows"] if isinstance(r, dict)]
    if not rows:
        raise ReportError(f"{path} holds no benchmark results (results.jsonl)")
    meta.pop("rows", None)
    meta.pop("summary", None)
    return Folder(path, str(meta.get("model") or path.name), rows, meta)


def _outcomes(rows: Sequence[Row]) -> dict[str, list[bool]]:
    by_problem: dict[str, list[bool]] = {}
    for row in rows:
        by_problem.setdefault(row.task_id, []).append(bool(row.correct))
    return by_problem


def method_stats(label: str, model: str, strategy: str, rows: Sequence[Row], options: dict[str, Any]) -> MethodStats:
    outcomes = _outcomes(rows)
    runs = len(rows)
    repeats = max(len(v) for v in outcomes.values())
    solved = sum(r.correct for r in rows)
    accuracy = solved / runs
    if repeats == 1:
        low, high = wilson_interval(solved, runs)
        kind = "Wilson"
    else:  # repeats are not independent trials: resample problems (stats.bootstrap_accuracy)
        low, high = bootstrap_accuracy(outcomes)
        kind = "bootstrap"
    tokens = sum(r.prompt_tokens + r.completion_tokens for r in rows)
    mean_tokens = tokens / runs
    return MethodStats(
        label=label,
        model=model,
        strategy=strategy,
        problems=len(outcomes),
        runs=runs,
        repeats=repeats,
        solved=solved,
        accuracy=accuracy,
        low=low,
        high=high,
        interval=kind,
        prompt_tokens=sum(r.prompt_tokens for r in rows) / runs,
        completion_tokens=sum(r.completion_tokens for r in rows) / runs,
        tokens_per_solved=tokens / solved if solved else None,
        accuracy_per_1k_tokens=accuracy / (mean_tokens / 1000) if mean_tokens else 0.0,
        calls=sum(r.calls for r in rows) / runs,
        wall_s=sum(r.wall_s for r in rows) / runs,
        options=options,
        rejected=sum(1 for r in rows if r.rejected),
        prompt_cache=prompt_cache(rows),
        cost=str(sweep_cost(rows)["cost"]),
    )


def paired_test(model: str, a: str, b: str, rows_a: Sequence[Row], rows_b: Sequence[Row]) -> PairedTest:
    """Exact McNemar on per-problem pass/fail (with repeats: solved in at least half of them) and the
    paired bootstrap interval of the accuracy difference A − B (repeats averaged per problem)."""
    out_a, out_b = _outcomes(rows_a), _outcomes(rows_b)
    pass_a = {t: sum(v) * 2 >= len(v) for t, v in out_a.items()}
    pass_b = {t: sum(v) * 2 >= len(v) for t, v in out_b.items()}
    only_a, only_b = discordant_pairs(pass_a, pass_b)
    difference, low, high = paired_bootstrap_difference(out_a, out_b)
    return PairedTest(
        model, a, b, len(out_a.keys() & out_b.keys()), only_a, only_b, mcnemar_exact(only_a, only_b),
        difference, low, high,
    )


@dataclass
class Report:
    folders: list[Folder]
    methods: list[MethodStats]
    paired: list[PairedTest]
    problems: list[str]  # every problem id, in first-seen order
    cells: dict[str, dict[str, tuple[int, int]]]  # label -> task_id -> (solved, runs)
    tokens: dict[str, list[int]]  # label -> tokens (prompt + completion) of each run

    @property
    def several_models(self) -> bool:
        return len({f.model for f in self.folders}) > 1


def build_report(folders: Sequence[Folder]) -> Report:
    several = len({f.model for f in folders}) > 1
    methods: list[MethodStats] = []
    paired: list[PairedTest] = []
    problems: dict[str, None] = {}
    cells: dict[str, dict[str, tuple[int, int]]] = {}
    tokens: dict[str, list[int]] = {}
    for folder in folders:
        order = list(folder.meta.get("strategies") or [])
        order += [s for s in dict.fromkeys(r.strategy for r in folder.rows) if s not in order]
        by_strategy = {s: [r for r in folder.rows if r.strategy == s] for s in order}
        by_strategy = {s: rows for s, rows in by_strategy.items() if rows}
        options = folder.meta.get("method_options") or {}
        for strategy, rows in by_strategy.items():
            label = f"{folder.model}/{strategy}" if several else strategy
            methods.append(method_stats(label, folder.model, strategy, rows, dict(options.get(strategy) or {})))
            for row in rows:
                problems.setdefault(row.task_id)
                solved, runs = cells.setdefault(label, {}).get(row.task_id, (0, 0))
                cells[label][row.task_id] = (solved + int(row.correct), runs + 1)
                tokens.setdefault(label, []).append(row.prompt_tokens + row.completion_tokens)
        names = list(by_strategy)
        references = [names[0]] + ([BASELINE] if BASELINE in by_strategy and names[0] != BASELINE else [])
        for reference in references:
            for other in names:
                if other != reference and not any(p.model == folder.model and {p.a, p.b} == {other, reference}
                                                  for p in paired):
                    paired.append(
                        paired_test(folder.model, other, reference, by_strategy[other], by_strategy[reference])
                    )
    return Report(list(folders), methods, paired, list(problems), cells, tokens)


# --- writing ------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _markdown_table(header: list[str], lines: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in line) + " |" for line in lines]
    return out


def _md_setup(report: Report) -> list[str]:
    out = ["# Benchmark report", ""]
    base = report.folders[0].path
    for folder in report.folders:
        setup = setup_line(folder.meta, folder.path)
        name = folder.path.name if folder.path == base else Path(os.path.relpath(folder.path, base)).as_posix()
        out.append(f"- `{name}`: model **{folder.model}**" + (f" ({setup})" if setup else ""))
    return out


def _md_methods(report: Report) -> list[str]:
    several = report.several_models
    out = [
        "",
        "## Methods",
        "",
        "Accuracy with its 95% interval: Wilson score interval for one run per problem; with repeats, a "
        "percentile bootstrap over problems (2,000 resamples, repeats averaged per problem). Tokens are "
        "means per run (prompt + completion); per solved = all tokens spent / runs solved.",
        "",
    ]
    header = (["model"] if several else []) + [
        "method", "solved", "accuracy", "95% interval", "prompt tok", "compl tok", "tok / solved",
        "acc / 1k tok", "calls", "wall s", "prompt cache", "cost",
    ]
    lines = [
        ([m.model] if several else [])
        + [
            m.strategy if several else m.label,
            f"{m.solved}/{m.runs}",
            _pct(m.accuracy),
            f"[{_pct(m.low)}, {_pct(m.high)}] ({m.interval})",
            f"{m.prompt_tokens:.0f}",
            f"{m.completion_tokens:.0f}",
            f"{m.tokens_per_solved:.0f}" if m.tokens_per_solved is not None else "—",
            f"{m.accuracy_per_1k_tokens:.3f}",
            f"{m.calls:.1f}",
            f"{m.wall_s:.2f}",
            m.prompt_cache,
            m.cost,
        ]
        for m in report.methods
    ]
    return out + _markdown_table(header, lines)


def _md_paired(report: Report) -> list[str]:
    if not report.paired:
        return []
    several = report.several_models
    out = [
        "",
        "## Paired comparisons",
        "",
        "Against the first method and against `single`, on the problems both ran: exact McNemar test "
        "(two-sided binomial on the discordant problems; with repeats a problem counts as solved when "
        "at least half its repeats solved it) and the 95% paired bootstrap interval of the accuracy "
        "difference A − B.",
        "",
    ]
    header = (["model"] if several else []) + [
        "A", "B", "problems", "only A", "only B", "McNemar p", "A − B", "95% interval",
    ]
    lines = [
        ([p.model] if several else [])
        + [p.a, p.b, str(p.problems), str(p.only_a), str(p.only_b), f"{p.p_value:.3g}",
           f"{100 * p.difference:+.1f} pts", f"[{100 * p.low:+.1f}, {100 * p.high:+.1f}]"]
        for p in report.paired
    ]
    return out + _markdown_table(header, lines)


def _md_notes(report: Report, plots: Sequence[str]) -> list[str]:
    """Method options, rejected verdicts and the plots."""
    out: list[str] = []
    with_options = [m for m in report.methods if m.options]
    if with_options:
        out += ["", "## Method options", ""]
        out += [
            f"- {m.label}: " + ", ".join(f"{k}={v}" for k, v in sorted(m.options.items())) for m in with_options
        ]
    forged = [m for m in report.methods if m.rejected]
    out += ["", "## Rejected verdicts", ""]
    out += (
        [f"- {m.label}: {m.rejected} run(s) returned something other than plain data from the tested function "
         "and failed (core.datasets.verdicts)" for m in forged]
        if forged else ["None: no run's code tried to pass a test with a non-data object."]
    )
    if plots:
        out += ["", "## Plots", ""] + [f"![{Path(p).stem}]({Path(p).name})" for p in plots if p.endswith(".png")]
    return out


def _md_per_problem(report: Report) -> list[str]:
    out = ["", "## Per problem", "", "✓ solved, ✗ not, k/n over repeats, · not run.", ""]
    labels = [m.label for m in report.methods]
    lines = [[task] + [cell_mark(*report.cells.get(label, {}).get(task, (0, 0))) for label in labels]
             for task in report.problems]
    return out + _markdown_table(["problem", *labels], lines)


def render_markdown(report: Report, plots: Sequence[str] = ()) -> str:
    out = _md_setup(report) + _md_methods(report) + _md_paired(report) + _md_notes(report, plots)
    return "\n".join(out + _md_per_problem(report)) + "\n"


def report_json(report: Report) -> dict[str, Any]:
    from dataclasses import asdict

    return {
        "folders": [{"path": str(f.path), "model": f.model, "setup": public_setup(f.meta, f.path)}
                    for f in report.folders],
        "confidence": 0.95,
        "methods": [asdict(m) for m in report.methods],
        "paired": [asdict(p) for p in report.paired],
        "problems": report.problems,
        "pass_fail": {label: {t: list(c) for t, c in cells.items()} for label, cells in report.cells.items()},
    }


def write_report(dirs: Sequence[Path], *, plots: bool = True) -> list[Path]:
    """report.md, report.json, report.html (plots inline, each run's page linked) and the plots (PNG + SVG) into
    the first folder, each run's session page beside its session (core.sessions.html.beside); the report files
    written."""
    folders = [load_folder(Path(d)) for d in dirs]
    report = build_report(folders)
    out = folders[0].path
    written: list[Path] = []
    if plots:
        from core.bench.plots import draw_plots  # matplotlib only when plots are asked for

        written += draw_plots(report, out)
    (out / "report.md").write_text(render_markdown(report, [str(p) for p in written]), encoding="utf-8")
    text = json.dumps(report_json(report), indent=1, ensure_ascii=False, default=str)
    (out / "report.json").write_text(text + "\n", encoding="utf-8")
    svgs = {p.stem: p.read_text(encoding="utf-8") for p in written if p.suffix == ".svg"}
    sessions = [f.path / row.session for f in folders for row in f.rows if row.session]
    pages = write_pages(sessions)
    (out / "report.html").write_text(render_html(report, out, svgs, pages), encoding="utf-8")
    return [out / "report.md", out / "report.json", out / "report.html", *written]
