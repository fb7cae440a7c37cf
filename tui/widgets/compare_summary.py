"""The compare screen's summary table: one row per method (core.compose.compare.summary_rows), the columns that
fit the screen, sortable by the columns that order something (a header click or the screen's o; again reverses).
It redraws only when a cell changed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from core.compose.compare import answer_gist, estimated_note, summary_rows
from core.runtime.textsafe import one_line, printable
from core.sessions.compare_record import CompareRow


@dataclass(frozen=True)
class SummaryColumn:
    """One column of the summary table: its label, its cell from a summary row (core.compose.compare.summary_rows),
    what it sorts by (None: not sortable, e.g. free text) and whether it stays at 80×24."""

    label: str
    cell: Callable[[dict[str, Any], bool], str]  # (row, narrow) -> the cell's text
    sort: Callable[[dict[str, Any]], Any] | None
    narrow: bool


def _tokens(key: str) -> Callable[[dict[str, Any], bool], str]:
    return lambda r, _narrow: f"{r['tokens_mark']}{r[key]:,}"


def verdict_cell(verdict: str, width: int) -> str:
    """A verdict as the summary shows it: the column's own text, cut with a marker where it is longer."""
    return one_line(verdict, width)


SUMMARY: tuple[SummaryColumn, ...] = (
    SummaryColumn("method", lambda r, _n: printable(r["method"]), lambda r: r["method"], True),
    SummaryColumn("answer", lambda r, _n: one_line(answer_gist(r["answer"]), 28) or "—", None, False),
    SummaryColumn("verdict", lambda r, n: verdict_cell(r["verdict"], 18 if n else 26), lambda r: r["verdict"], True),
    SummaryColumn("calls", lambda r, _n: str(r["calls"]), lambda r: r["calls"], True),
    SummaryColumn("prompt", _tokens("prompt_tokens"), lambda r: r["prompt_tokens"], False),
    SummaryColumn("completion", _tokens("completion_tokens"), lambda r: r["completion_tokens"], False),
    SummaryColumn("total", _tokens("total_tokens"), lambda r: r["total_tokens"], True),
    SummaryColumn("wall s", lambda r, _n: f"{r['wall_s']:.1f}", lambda r: r["wall_s"], True),
    # The differences sort as total and wall do: sorting by them would only repeat those.
    SummaryColumn("Δ tokens", lambda r, _n: r["tokens_vs_first"], None, True),
    SummaryColumn("Δ wall", lambda r, _n: r["wall_vs_first"], None, True),
    SummaryColumn("prompt cache", lambda r, _n: r["cached"],
                  lambda r: -1 if r["cached_tokens"] is None else r["cached_tokens"], False),
)
SUMMARY_COLUMNS = tuple(c.label for c in SUMMARY)
SORTABLE = tuple(i for i, c in enumerate(SUMMARY) if c.sort is not None)


class SummaryTable(DataTable[str]):
    """The summary, sortable. Keys stay with the screen (left/right move between columns), except at 80×24
    while the table is shown alone: then it takes focus and left/right scroll its wide rows."""

    can_focus = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sort_column: int | None = None  # an index into SUMMARY
        self.sort_reverse = False
        self._rows: list[CompareRow] = []
        self._shown_cells: list[tuple[str, ...]] | None = None  # the summary as last drawn
        self._narrow: bool | None = None  # the columns are the 80×24 set

    def summary_columns(self) -> list[SummaryColumn]:
        """The columns shown: all of them, or at 80×24 those that fit (the answer is in each method's column)."""
        return [c for c in SUMMARY if c.narrow or not self._narrow]

    def set_narrow(self, narrow: bool) -> None:
        """At 80×24 the columns that matter, all in view; redrawn when that changes."""
        if self._narrow == narrow:
            return
        self._narrow = narrow
        self.clear(columns=True)
        for shown in self.summary_columns():
            self.add_column(shown.label, key=shown.label)
        self._shown_cells = None
        if self._rows:  # once shown (not while the screen first lays out)
            self.show(self._rows)

    def summary(self) -> list[dict[str, Any]]:
        """The summary rows in the chosen order."""
        rows = summary_rows(self._rows)
        sort = SUMMARY[self.sort_column].sort if self.sort_column is not None else None
        if sort is not None:
            rows.sort(key=sort, reverse=self.sort_reverse)
        return rows

    def show(self, rows: list[CompareRow]) -> None:
        """Show ``rows`` (the methods' compare rows), if a cell changed since the last draw."""
        self._rows = rows
        columns = self.summary_columns()
        narrow = bool(self._narrow)
        cells = [tuple(column.cell(r, narrow) for column in columns) for r in self.summary()]
        if cells == self._shown_cells:
            return
        self._shown_cells = cells
        self.border_title = printable(estimated_note(rows))  # what a "~" means
        self.clear()
        for values in cells:
            self.add_row(*values)
        for column, shown in zip(columns, self.ordered_columns, strict=True):
            index = SUMMARY.index(column)
            mark = "" if self.sort_column != index else (" ▼" if self.sort_reverse else " ▲")
            shown.label = Text(column.label + mark)
        self.refresh()

    def sort_by(self, index: int) -> None:
        """Sort by SUMMARY[index] (again: reverse)."""
        if self.sort_column == index:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = index, False
        self.show(self._rows)

    def sort_next(self) -> str:
        """Sort by the next sortable column shown at this size; its label."""
        shown = [i for i in SORTABLE if SUMMARY[i] in self.summary_columns()]
        later = [i for i in shown if self.sort_column is None or i > self.sort_column]
        self.sort_column = later[0] if later else shown[0]
        self.sort_reverse = False
        self.show(self._rows)
        return SUMMARY_COLUMNS[self.sort_column]

    def on_data_table_header_selected(self, message: DataTable.HeaderSelected) -> None:
        """A header clicked: sort by it, or say it does not sort."""
        message.stop()
        label = str(message.column_key.value)
        index = SUMMARY_COLUMNS.index(label) if label in SUMMARY_COLUMNS else None
        if index is None or index not in SORTABLE:
            self.notify(f"the summary does not sort by {label}", severity="warning", timeout=2)
            return
        self.sort_by(index)
