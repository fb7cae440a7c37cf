"""The open-session picker: saved sessions and the shipped examples, with the columns of
``swarm-tui sessions``; Enter opens one in the replay screen, or follows it live when another process
is still writing it (outcome "running"; "interrupted" when that process died).

Reading the files happens in a thread worker that posts the listing; unreadable files become one
notification line each, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from core.methods.catalogue import unit_count
from core.runtime.config import Settings
from core.runtime.textsafe import printable
from core.sessions.compare_record import CompareSummary, list_records
from core.sessions.eventlog import live_state
from core.sessions.model import SessionFormatError
from core.sessions.store import SessionSummary, list_sessions, load_session
from sessions import EXAMPLES_DIR

from ..widgets.footer import WrapFooter

COLUMNS = ("date", "problem", "domain", "method", "done", "outcome", "tokens", "file")
PROBLEM_WIDTH = 48  # as `swarm-tui sessions`; narrower when the terminal is
MIN_PROBLEM_WIDTH = 20
MAX_ERROR_TOASTS = 3


@dataclass
class Listing:
    rows: list[tuple[SessionSummary, bool]] = field(default_factory=list)  # (summary, is a shipped example)
    errors: list[str] = field(default_factory=list)
    saved: int = 0
    examples: int = 0
    compares: set[Path] = field(default_factory=set)  # rows that are compare records (they open side by side)


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def gather(sessions_dir: Path, examples_dir: Path = EXAMPLES_DIR) -> Listing:
    """Saved sessions (newest first), then the shipped examples; one error line per skipped file."""
    out = Listing()
    directories = [(sessions_dir, False)]
    if not _same_dir(sessions_dir, examples_dir):
        directories.append((examples_dir, True))
    for directory, example in directories:
        try:
            found = list_sessions(directory)
        except OSError as exc:  # e.g. the folder cannot be read
            out.errors.append(f"{directory}: cannot list the folder ({exc.strerror or exc})")
            continue
        out.rows += [(summary, example) for summary in found]
        out.errors += [str(error) for error in found.errors]
        if not example:
            records, errors = list_records(directory)
            out.rows += [(_as_summary(record), False) for record in records]
            out.compares.update(record.path for record in records)
            out.errors += [str(error) for error in errors]
        if example:
            out.examples += len(found)
        else:
            out.saved += len(found)
    return out


def _as_summary(record: CompareSummary) -> SessionSummary:
    """A compare record as a row of the picker: its outcome column names the methods compared."""
    return SessionSummary(path=record.path, created=record.created, problem=record.problem, domain=record.domain,
                          rounds=0, outcome="compare: " + ", ".join(record.methods), tokens=0, demo=record.demo,
                          parent=None)


def _cell(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _middle(text: str, width: int) -> str:
    """Shorten a file name in the middle, so its start (the date) and its end (the type) stay."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def row_cells(summary: SessionSummary, example: bool, problem_width: int = PROBLEM_WIDTH,
              file_width: int = 200) -> tuple[str, ...]:
    """The cells of one row, as ``swarm-tui sessions`` prints them (narrower when asked); text from the
    file made printable."""
    problem = _cell(("[demo] " if summary.demo else "") + printable(summary.problem), problem_width)
    name = printable(f"example: {summary.path.name}" if example else summary.path.name)
    # "done" in the method's unit (DMoA's steps, TopoWeaver-R1's turns); a comparison names its methods instead.
    compare = summary.outcome.startswith("compare: ")
    done = "" if compare else unit_count(summary.method, summary.rounds)
    return (summary.created, problem, printable(summary.domain), "" if compare else printable(summary.method), done,
            printable(summary.outcome), str(summary.tokens), _middle(name, file_width))


def column_widths(rows: list[tuple[str, ...]], total: int) -> tuple[int, int]:
    """(problem, file) widths so that every column fits in ``total`` cells: the problem shrinks to
    30 first, then to 20, then the file name to 20 (the file is what `swarm-tui replay` takes). DataTable
    pads each cell by one on both sides; two cells are kept for the scrollbar."""
    def need(i: int) -> int:
        return max([len(COLUMNS[i]), *(len(r[i]) for r in rows)])

    room = total - 2 - sum(need(i) + 2 for i in (0, 2, 3, 4, 5, 6)) - 4  # the problem's and file's padding
    problem, file = PROBLEM_WIDTH, need(7)
    for shrink_problem_to, shrink_file_to in ((30, file), (MIN_PROBLEM_WIDTH, file), (MIN_PROBLEM_WIDTH, 20)):
        if problem + file <= room:
            break
        problem = max(shrink_problem_to, room - file)
        file = max(shrink_file_to, room - problem)
    return problem, file


NUMERIC = {4, 6}  # right-aligned, as in the CLI table


class SessionTable(DataTable[Text]):
    """The sessions, one row each; enter opens the selected one (and says so in the footer)."""

    BINDINGS = [
        Binding("enter", "select_cursor", "open", id="picker_open",
                tooltip="Open the selected session in the replay screen"),
    ]


class SessionPickerScreen(Screen[None]):
    BINDINGS = [
        Binding("r", "reload", "reload", id="picker_reload", tooltip="Read the sessions folder again"),
        Binding("escape", "back", "back", id="picker_back", tooltip="Close the picker"),
    ]

    class Listed(Message):
        def __init__(self, listing: Listing) -> None:
            super().__init__()
            self.listing = listing

    def __init__(self, settings: Settings, *, examples_dir: Path = EXAMPLES_DIR) -> None:
        super().__init__()
        self.settings = settings
        self.sessions_dir = Path(settings.sessions_dir)
        self.examples_dir = examples_dir
        self.listing: Listing | None = None
        self._told_errors: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static(Content.assemble(
            ("Open a session", "bold"), " — saved in ", (str(self.sessions_dir), "bold"),
            " and the shipped examples; enter opens one in the replay screen, esc goes back",
        ), id="picker-title")
        yield SessionTable(id="sessions-table", cursor_type="row", zebra_stripes=True)
        yield Static("reading sessions…", id="picker-status")
        yield WrapFooter()

    def on_mount(self) -> None:
        table = self.query_one(SessionTable)
        for name in COLUMNS:
            table.add_column(name, key=name)
        table.focus()
        self._read()

    @work(thread=True, exclusive=True, group="picker", exit_on_error=False)
    def _read(self) -> None:
        """Thread worker: reads every file, then posts the listing (touches no widget)."""
        self.post_message(self.Listed(gather(self.sessions_dir, self.examples_dir)))

    def on_session_picker_screen_listed(self, message: Listed) -> None:
        listing = self.listing = message.listing
        table = self.query_one(SessionTable)
        row = table.cursor_row  # kept across a reload (coming back from a replay)
        full = [row_cells(summary, example) for summary, example in listing.rows]
        widths = column_widths(full, self.app.size.width or 120)  # the terminal: the screen may not be laid out yet
        rows = [row_cells(summary, example, *widths) for summary, example in listing.rows]
        # Columns sized from their cells, set here: auto-sized columns could keep their header's width when
        # a reload raced the first listing.
        table.clear(columns=True)
        for i, name in enumerate(COLUMNS):
            table.add_column(name, key=name, width=max([len(name), *(len(r[i]) for r in rows)]))
        for index, cells in enumerate(rows):
            # Text cells: a problem like "[demo] $f(x)$" is shown as written, never read as markup.
            table.add_row(*(Text(c, justify="right" if i in NUMERIC else "left") for i, c in enumerate(cells)),
                          key=str(index))
        if row > 0 and table.row_count:  # a reload: back on the row the user was on
            table.move_cursor(row=min(row, table.row_count - 1))
        parts = [f"{listing.saved} saved session(s) in {self.sessions_dir}", f"{listing.examples} shipped example(s)"]
        if listing.errors:
            parts.append(f"{len(listing.errors)} unreadable file(s) skipped")
        self.query_one("#picker-status", Static).update(Content(" · ".join(parts)))
        if self._told_errors == listing.errors:
            return  # a reload: these were already said
        self._told_errors = list(listing.errors)
        for error in listing.errors[:MAX_ERROR_TOASTS]:
            self.notify(f"skipped {error}", severity="warning", timeout=10)
        if len(listing.errors) > MAX_ERROR_TOASTS:
            self.notify(f"…and {len(listing.errors) - MAX_ERROR_TOASTS} more unreadable file(s)",
                        severity="warning", timeout=10)

    # --- keys --------------------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self._open(event.cursor_row)

    def _open(self, index: int) -> None:
        if self.listing is None or not 0 <= index < len(self.listing.rows):
            self.notify("no session selected", severity="warning")
            return
        summary = self.listing.rows[index][0]
        path = summary.path
        app: Any = self.app
        if path in self.listing.compares:
            self._open_compare(path)
            return
        if summary.live == "running" and live_state(path) == "running":
            # Still being written by another process: follow it live (it becomes a replay when it ends).
            from .follow import open_follow

            self.dismiss()
            open_follow(app, path)
            return
        try:
            session = load_session(path)
        except SessionFormatError as exc:  # changed or removed since it was listed
            self.notify(str(exc), severity="error", timeout=12)
            return
        app.open_replay(session, path, picker=self)  # on top: esc in the replay comes back here

    def _open_compare(self, path: Path) -> None:
        """A compare record: its methods' sessions side by side (esc comes back here)."""
        from core.compose.compare_saved import load_saved

        from .compare_saved import SavedCompareScreen

        try:
            runs = load_saved([path])
        except SessionFormatError as exc:
            self.notify(str(exc), severity="error", timeout=12)
            return
        screen = SavedCompareScreen(runs, str(path))
        screen.back_to = self
        self.app.push_screen(screen)

    def action_reload(self) -> None:
        self.query_one("#picker-status", Static).update("reading sessions…")
        self._read()

    def action_back(self) -> None:
        self.dismiss()
