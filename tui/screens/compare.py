"""The compare screen: one column per method on the same problem, a summary table under them.

Live: the comparison (core.compose.compare) runs in a worker; each method's events come through its own
bridge as MethodEvent messages and feed that method's column (a RunModel each). Saved: the columns replay
recorded sessions, and n/p move every column one step of its own. At 80×24 the columns become tabs, one
method at a time, the summary table a key (s) away.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import HorizontalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static, Tab, Tabs

from core.runtime import events as ev
from core.runtime.dispatch import is_delta
from core.runtime.textsafe import printable
from core.sessions.compare_record import CompareRecord, CompareRow

from ..bridge import EventBridge
from ..widgets.compare_column import CompareColumn
from ..widgets.compare_summary import SummaryTable
from ..widgets.footer import WrapFooter
from .compare_files import EXPORT_NAMES, export_comparison

NARROW_WIDTH, SHORT_HEIGHT = 100, 30  # below either: tabs instead of columns
MIN_COLUMN = 38  # a column's least width: four fit in 160 cells, more scroll sideways
TICK_S = 0.2  # columns and the summary redraw at most 5 times a second


COMPARE_BINDINGS: list[Binding] = [
    Binding("left", "focus_column(-1)", "◀", id="compare_prev", tooltip="Focus the column on the left"),
    Binding("right", "focus_column(1)", "▶", id="compare_next", tooltip="Focus the column on the right"),
    Binding("s", "toggle_summary", "summary", id="compare_summary",
            tooltip="Show or hide the summary table (at 80×24: switch between a column and the table)"),
    Binding("enter", "open_column", "open", id="compare_open",
            tooltip="Open the focused method's full run screen (esc comes back)"),
    Binding("space", "toggle_pause", "pause", key_display="spc", id="compare_pause",
            tooltip="Pause or resume every method"),
    Binding("n", "step_all", "step all", id="compare_step_all",
            tooltip="Every method one step of its own (round, step, turn); in replay: every column forward"),
    Binding("N", "step_focused", "step one", id="compare_step_one",
            tooltip="Only the focused method one step of its own"),
    Binding("p", "back_all", "back all", id="compare_back_all", tooltip="Replay: every column one step back"),
    Binding("o", "sort_next", "sort", id="compare_sort",
            tooltip="Sort the summary by the next column (or click a header; again to reverse)"),
    Binding("e", "export", "export", id="compare_export",
            tooltip="Export the comparison as Markdown, JSON and CSV beside its record"),
    *(Binding(str(i), f"focus_number({i})", str(i), show=False, id=f"compare_col{i}",
              tooltip=f"Focus column {i}") for i in range(1, 10)),
    Binding("escape", "back", "back", id="compare_back",
            tooltip="Back to where it was opened: the session picker, or the replay a fork was made from"),
    Binding("question_mark,f1", "help", "help", id="help", tooltip="List every key and what it does"),
    Binding("q", "request_quit", "quit", id="quit", tooltip="Quit (asks first while methods are running)"),
]


def header_text(record: CompareRecord, demo_played: str = "") -> str:
    """The screen's two header lines: where the methods run, and the problem's first line (or what a demo plays
    instead of it)."""
    r = record
    first = (r.problem.strip().splitlines() or [""])[0]
    first = first if len(first) <= 90 else first[:89] + "…"
    demo = "DEMO (scripted server) · " if r.demo else ""
    played = f"DEMO plays {demo_played} instead of: " if demo_played else ""
    return printable(f"compare · {demo}{r.model} at {r.base_url} · {r.domain}\n{played}{first}")


class MethodEvent(Message):
    """One method's event, on its way to the compare screen."""

    def __init__(self, method: str, event: ev.Event) -> None:
        super().__init__()
        self.method = method
        self.event = event


class MethodBridge(EventBridge):
    """An engine sink for one method of a comparison: events become MethodEvent messages to the screen
    (deltas coalesced as for a single run, see EventBridge)."""

    def __init__(self, screen: Screen[Any], method: str) -> None:
        super().__init__(screen.app)
        self.screen = screen
        self.method = method

    def _post(self, event: ev.Event) -> None:
        self.screen.post_message(MethodEvent(self.method, event))


class CompareScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [*COMPARE_BINDINGS]

    def __init__(self, record: CompareRecord) -> None:
        super().__init__()
        self.record = record
        self.rows: dict[str, CompareRow] = {row.method: row for row in record.rows}
        self.columns: dict[str, CompareColumn] = {}
        self.events: dict[str, list[ev.Event]] = {row.method: [] for row in record.rows}
        self.focused_index = 0
        self.summary_toggled = False
        self.detail: Any = None  # the full run screen opened from a column (live), while it is open
        self.detail_method = ""
        self.demo_played = ""  # the demo's own problem, when it played that instead of the one asked
        self.back_to: Screen[Any] | None = None  # the session picker it was opened from (esc goes back)

    # --- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(header_text(self.record, self.demo_played), id="cmp-header")
        yield Tabs(*(Tab(printable(row.method), id=f"tab-{i}") for i, row in enumerate(self.record.rows)),
                   id="cmp-tabs")
        with HorizontalScroll(id="cmp-columns", can_focus=False):
            for i, row in enumerate(self.record.rows):
                column = CompareColumn(row.method, row, id=f"col-{i}")
                self.columns[row.method] = column
                yield column
        table = SummaryTable(id="cmp-summary", zebra_stripes=True, cursor_type="none")
        yield table
        yield WrapFooter()

    def show_header(self) -> None:
        self.query_one("#cmp-header", Static).update(header_text(self.record, self.demo_played))

    def on_mount(self) -> None:
        self.on_resize()
        self._focus(0)
        self.query_one(SummaryTable).show(list(self.rows.values()))
        self.set_interval(TICK_S, self.tick)
        self.started()

    def started(self) -> None:
        """After the screen is mounted: a subclass starts its runs or positions its replays here (not in its
        own on_mount, which Textual would call besides this class's)."""

    def on_resize(self) -> None:
        """Columns side by side, or at 80×24 tabs (one method at a time) with the summary a key away."""
        narrow = self.size.width < NARROW_WIDTH or self.size.height < SHORT_HEIGHT
        self.set_class(narrow, "-narrow")
        self.set_class(self.summary_toggled, "-summary-toggled")
        # Widths in cells: fr units in a sideways-scrolling row gave every column the whole width.
        width = max(MIN_COLUMN, self.size.width // max(1, len(self.columns)))
        for column in self.columns.values():
            column.styles.width = "1fr" if narrow else width
        table = self.query_one(SummaryTable)
        table.set_narrow(narrow)
        alone = narrow and self.summary_toggled
        table.can_focus = alone
        if alone:
            table.focus()
        elif table.has_focus:
            self.set_focus(None)

    # --- events -------------------------------------------------------------------------------
    def on_method_event(self, message: MethodEvent) -> None:
        self.apply(message.method, message.event)

    def apply(self, method: str, event: ev.Event) -> None:
        column = self.columns.get(method)
        if column is None:
            return
        if not is_delta(event):  # a full view opened later starts from the finished calls
            self.events[method].append(event)
        column.apply(event)
        played = column.model.demo_played  # from the method's RunStarted
        if played and not self.demo_played:
            self.demo_played = played
            self.show_header()
        if self.detail is not None and self.detail_method == method and self.detail.is_attached:
            self.detail.apply_event(event)

    def tick(self) -> None:
        for column in self.columns.values():
            column.tick()
        self.query_one(SummaryTable).show(list(self.rows.values()))

    # --- focus --------------------------------------------------------------------------------
    @property
    def focused_method(self) -> str:
        return self.record.rows[self.focused_index].method

    def _focus(self, index: int) -> None:
        self.focused_index = max(0, min(len(self.record.rows) - 1, index))
        for i, row in enumerate(self.record.rows):
            self.columns[row.method].set_class(i == self.focused_index, "-focused")
        tabs = self.query_one(Tabs)
        # A screen pushed over another (a fork's comparison) may not have mounted its tabs yet: the first
        # one is active once they are.
        if tabs.active != f"tab-{self.focused_index}" and tabs.query(f"#tab-{self.focused_index}"):
            # No TabActivated echo: two quick presses queued two echoes that each refocused the other tab,
            # back and forth for good (a core at 100 % until quit).
            with tabs.prevent(Tabs.TabActivated):
                tabs.active = f"tab-{self.focused_index}"
        column = self.columns[self.focused_method]
        self.query_one("#cmp-columns", HorizontalScroll).scroll_to_widget(column, animate=False)

    def on_tabs_tab_activated(self, message: Tabs.TabActivated) -> None:
        """A tab clicked (or moved to with the tab bar's own keys)."""
        tabs = self.query_one(Tabs)
        if message.tab is not None and message.tab.id and message.tab.id == tabs.active:  # stale ones: ignored
            index = int(message.tab.id.removeprefix("tab-"))
            if index != self.focused_index:
                self._focus(index)

    def action_focus_column(self, step: int) -> None:
        self._focus((self.focused_index + step) % len(self.record.rows))

    def action_focus_number(self, number: int) -> None:
        if number <= len(self.record.rows):
            self._focus(number - 1)

    # --- summary ------------------------------------------------------------------------------
    def action_toggle_summary(self) -> None:
        self.summary_toggled = not self.summary_toggled
        self.on_resize()

    def action_sort_next(self) -> None:
        """The summary sorted by its next sortable column (shown at this size)."""
        label = self.query_one(SummaryTable).sort_next()
        self.notify(f"summary sorted by {label}", timeout=2)

    # --- export -------------------------------------------------------------------------------
    def action_export(self) -> None:
        export_comparison(self, self.record, tuple(EXPORT_NAMES))

    def palette_commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        return [(f"Export comparison as {name}", "beside the compare record",
                 partial(export_comparison, self, self.record, (fmt,))) for fmt, name in EXPORT_NAMES.items()]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back":
            return self.back_to is not None
        return True

    def action_back(self) -> None:
        """Back to the screen it was opened from: the session picker, or the replay a fork was made from
        (the fork's own run screen, below this one, goes with it)."""
        back_to = self.back_to
        if back_to is None or self.app.screen is not self or back_to not in self.app.screen_stack:
            return
        while self.app.screen is not back_to:
            self.app.pop_screen()
        if hasattr(back_to, "model") and hasattr(self.app, "swarm_screen"):  # a replay: the app's run screen again
            self.app.swarm_screen = back_to

    def action_help(self) -> None:
        from .help import HelpScreen

        self.app.push_screen(HelpScreen(self))

    # --- running (the subclasses say what the keys do) -----------------------------------------
    @property
    def running(self) -> bool:
        return False

    def action_open_column(self) -> None: ...
    def action_toggle_pause(self) -> None: ...
    def action_step_all(self) -> None: ...
    def action_step_focused(self) -> None: ...
    def action_back_all(self) -> None: ...

    def action_request_quit(self) -> None:
        if not self.running:
            self.app.exit(0)
            return
        from .confirm import ConfirmScreen

        def answer(yes: bool) -> None:
            if yes:
                self.cancel()
                self.app.exit(0)

        self.app.push_screen(ConfirmScreen(
            "Methods are still running. Quit? Their runs are cancelled; every session so far is kept.",
            on_answer=answer))

    def cancel(self) -> None: ...
