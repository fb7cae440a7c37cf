"""A benchmark folder in the TUI (``swarm-tui bench show DIR``): the per-method table with 95%
intervals, a terminal plot of accuracy against mean tokens, and the problem × method pass/fail grid.

Enter on a cell of the grid opens that run (the problem under that method; repeat 0 with repeats) in the
replay screen; esc there comes back here.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual_plotext import PlotextPlot

from core.bench.report import Report
from core.runtime.textsafe import printable

from ..widgets.footer import WrapFooter


def method_lines(report: Report) -> list[tuple[str, ...]]:
    """The per-method table's rows (as report.md's, shorter)."""
    return [
        (
            m.label,
            f"{m.solved}/{m.runs}",
            f"{100 * m.accuracy:.1f}%",
            f"[{100 * m.low:.1f}, {100 * m.high:.1f}]",  # the method (Wilson, ...) is in the column's name
            f"{m.prompt_tokens + m.completion_tokens:.0f}",
            f"{m.accuracy_per_1k_tokens:.3f}",
            f"{m.calls:.1f}",
            f"{m.wall_s:.2f}",
        )
        for m in report.methods
    ]


def nice_step(raw: float) -> float:
    """A round tick step near ``raw``: 1, 2 or 5 times a power of ten."""
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


class BenchScreen(Screen[None]):
    BINDINGS = [
        Binding("enter", "open_run", "open run", show=True),
        Binding("q", "app.quit", "quit", show=True),
    ]
    DEFAULT_CSS = """
    BenchScreen #bench-title { height: auto; padding: 0 1; text-style: bold; }
    BenchScreen #bench-top { height: 14; }
    BenchScreen #bench-methods { width: auto; max-width: 70%; }
    BenchScreen #bench-plot { width: 1fr; min-width: 30; }
    BenchScreen #bench-problems { height: 1fr; }
    /* Narrow terminals: the plot goes under the table, which keeps its full width. */
    BenchScreen.-narrow #bench-top { layout: vertical; height: auto; }
    BenchScreen.-narrow #bench-methods { max-width: 100%; height: auto; }
    BenchScreen.-narrow #bench-plot { height: 9; }
    """
    NARROW = 130  # columns below which the table and the plot no longer fit side by side

    def __init__(self, report: Report) -> None:
        super().__init__()
        self.report = report
        self.labels = [m.label for m in report.methods]

    def compose(self) -> ComposeResult:
        folders = ", ".join(f"{f.path} (model {f.model})" for f in self.report.folders)
        yield Static(Text(printable(f"Benchmark: {folders} — accuracy with 95% intervals")), id="bench-title")
        with Horizontal(id="bench-top"):
            yield DataTable(id="bench-methods", cursor_type="row", zebra_stripes=True)
            yield PlotextPlot(id="bench-plot")
        yield DataTable(id="bench-problems", cursor_type="cell")
        yield WrapFooter()

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < self.NARROW, "-narrow")

    def on_mount(self) -> None:
        self.set_class(self.app.size.width < self.NARROW, "-narrow")
        methods = self.query_one("#bench-methods", DataTable)
        kinds = sorted({m.interval for m in self.report.methods}) or ["95%"]
        methods.add_columns("method", "solved", "accuracy", f"95% ({'/'.join(kinds)})", "tokens", "acc/1k", "calls",
                            "wall s")
        for line in method_lines(self.report):
            methods.add_row(*(Text(printable(cell)) for cell in line))
        problems = self.query_one("#bench-problems", DataTable)
        problems.add_columns("problem", *self.labels)
        for task in self.report.problems:
            cells: list[Text] = [Text(printable(task))]
            for label in self.labels:
                solved, runs = self.report.cells.get(label, {}).get(task, (0, 0))
                mark = "·" if not runs else ("✓" if solved else "✗") if runs == 1 else f"{solved}/{runs}"
                style = "dim" if not runs else "green" if solved == runs else "red" if not solved else "yellow"
                cells.append(Text(mark, style=style))
            problems.add_row(*cells, key=task)
        self.draw_plot()
        problems.focus()

    def draw_plot(self) -> None:
        """Each method a point with its 95% interval as a vertical bar and its name beside it; the axes
        start at 0 so distances read as ratios."""
        widget = self.query_one("#bench-plot", PlotextPlot)
        plt = widget.plt
        plt.clear_figure()
        right = max((m.prompt_tokens + m.completion_tokens for m in self.report.methods), default=1.0) or 1.0
        for m in self.report.methods:
            x = m.prompt_tokens + m.completion_tokens
            plt.plot([x, x], [100 * m.low, 100 * m.high], marker="braille")  # the 95% interval
            plt.scatter([x], [100 * m.accuracy], marker="●")
            plt.text(m.label[:14], x + right * 0.04, 100 * m.accuracy, alignment="left")  # beside its point
        plt.title("accuracy % (95% interval) vs mean tokens")
        plt.xlim(0, right * 1.3)  # room for the rightmost name
        # Fixed ticks: 0 to 100 in quarters (plotext's own started at 105 and skipped some on a short plot);
        # whole tokens on x.
        plt.ylim(0, 100)
        plt.yticks([0, 25, 50, 75, 100])
        step = nice_step(right * 1.3 / 4)
        plt.xticks([step * i for i in range(5) if step * i <= right * 1.3], [f"{step * i:,.0f}" for i in range(5)
                                                                              if step * i <= right * 1.3])
        widget.refresh()

    def run_session(self, task: str, label: str) -> Path | None:
        """The session file of a problem's run under a method (repeat 0 first), if it was saved."""
        method = next((m for m in self.report.methods if m.label == label), None)
        if method is None:
            return None
        folder = next((f for f in self.report.folders if f.model == method.model), self.report.folders[0])
        runs = sorted(
            (r for r in folder.rows if r.task_id == task and r.strategy == method.strategy), key=lambda r: r.repeat
        )
        for row in runs:
            if row.session and (folder.path / row.session).is_file():
                return folder.path / row.session
        return None

    def action_open_run(self) -> None:
        problems = self.query_one("#bench-problems", DataTable)
        row, column = problems.cursor_coordinate
        if column == 0 or row >= len(self.report.problems):
            self.app.notify("choose a method's cell of the problem (← →) to open its run")
            return
        task, label = self.report.problems[row], self.labels[column - 1]
        path = self.run_session(task, label)
        if path is None:
            self.app.notify(f"no saved session for {task} under {label}", severity="warning")
            return
        from core.sessions.model import SessionFormatError
        from core.sessions.store import load_session

        try:
            session = load_session(path)
        except (OSError, SessionFormatError, ValueError) as exc:
            self.app.notify(f"cannot open {path.name}: {exc}", severity="error")
            return
        app: Any = self.app
        app.open_replay(session, path, picker=self)

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        if event.data_table.id == "bench-problems":
            self.action_open_run()

    def action_reload(self) -> None:  # the app calls it when a replay opened from here closes
        pass
