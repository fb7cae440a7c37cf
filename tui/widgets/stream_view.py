"""A wrapped, append-only text view for streaming tokens (Line API, like toolong's log view).

Appending re-wraps only the last logical line, so six agents streaming at once cost O(chunk) per
append, not O(text). The view follows new text only while the user is at the bottom.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

_CONTROL = dict.fromkeys(range(0x20), None) | {ord("\t"): "    ", ord("\n"): None}


def wrap_line(line: str, width: int) -> list[str]:
    """Word-wrap one line to ``width`` cells (character cells; long words are split)."""
    if width <= 0 or len(line) <= width:
        return [line]
    rows: list[str] = []
    while len(line) > width:
        cut = line.rfind(" ", 0, width + 1)
        if cut <= 0:
            rows.append(line[:width])
            line = line[width:]
        else:
            rows.append(line[:cut])
            line = line[cut + 1 :]
    rows.append(line)
    return rows


def find_all(text: str, query: str) -> list[int]:
    """Start of every case-insensitive occurrence of ``query`` in ``text``."""
    if not query:
        return []
    low, q = text.lower(), query.lower()
    out, at = [], low.find(q)
    while at >= 0:
        out.append(at)
        at = low.find(q, at + max(1, len(q)))
    return out


class StreamView(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"stream-view--match", "stream-view--current"}
    DEFAULT_CSS = """
    StreamView {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;
        &:focus { background-tint: $foreground 5%; }
        & > .stream-view--match { background: $warning 40%; }
        & > .stream-view--current { background: $accent; color: $text; text-style: bold; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[str] = [""]
        self._rows: list[str] = []
        self._row_start: list[int] = []  # first wrapped row of each logical line
        self._wrap_width = 0
        self.highlight = ""  # a search: its occurrences are marked
        self.current: tuple[int, int] | None = None  # (row, column) of the search's current match
        self._frame: tuple[Style, int, int] | None = None  # this redraw's (style, top row, width)
        self._at_end = True  # following the text as it arrives (see watch_scroll_y)
        self._strips: LRUCache[tuple[str, int, Style], Strip] = LRUCache(64)

    def set_highlight(self, query: str, current: tuple[int, int] | None = None) -> None:
        if (query, current) != (self.highlight, self.current):
            self.highlight, self.current = query, current
            self.refresh()

    def matches(self, query: str) -> list[tuple[int, int]]:
        """(wrapped row, column) of every occurrence of ``query`` (one inside a row; a match split by
        the wrapping is not found)."""
        return [(row, col) for row, line in enumerate(self._rows) for col in find_all(line, query)]

    def scroll_to_row(self, row: int) -> None:
        """Bring a wrapped row into view, a few rows below the top when it can."""
        height = self.scrollable_content_region.height or 1
        if not self.scroll_y <= row < self.scroll_y + height:
            self.scroll_to(y=max(0, row - height // 3), animate=False, immediate=True)

    @property
    def text(self) -> str:
        return "\n".join(self._lines)

    @property
    def row_count(self) -> int:
        return len(self._rows)

    def _width(self) -> int:
        return max(1, self.scrollable_content_region.width) if self.is_mounted else 0

    def _wrap_from(self, index: int) -> None:
        """Re-wrap logical lines from ``index`` to the end."""
        width = self._wrap_width
        if index < len(self._row_start):
            del self._rows[self._row_start[index] :]
            del self._row_start[index:]
        for line in self._lines[index:]:
            self._row_start.append(len(self._rows))
            self._rows.extend(wrap_line(line, width) if width else [line])

    def _rewrap_all(self) -> None:
        self._rows, self._row_start = [], []
        self._wrap_from(0)
        self._set_rows()

    def _set_rows(self) -> None:
        """The scrollable height is the wrapped row count. Setting ``virtual_size`` would lay out the whole
        screen on every streamed piece (16 panes streaming made most frames a full layout pass); only this
        view's scrollbar depends on it, and a layout pass happens only when the scrollbar appears or goes."""
        size = Size(self._wrap_width, len(self._rows))
        if size == self.virtual_size:
            return
        self.set_reactive(StreamView.virtual_size, size)
        if self.is_mounted:
            self._scroll_update(size)  # the scrollbar's range, and scroll_y kept within it
        self.refresh()

    def clear(self) -> None:
        self._lines = [""]
        self._rewrap_all()
        self.scroll_to(0, 0, animate=False)
        self.refresh()

    def set_text(self, text: str) -> None:
        """Show ``text`` whole, from its top (a search then scrolls to its match)."""
        self._lines = [""]
        self._rewrap_all()
        self.append(text)
        self.scroll_to(0, 0, animate=False, immediate=True)

    def append(self, text: str) -> None:
        if not text:
            return
        at_bottom = self._at_end
        parts = text.split("\n")
        first = len(self._lines) - 1
        self._lines[-1] += parts[0].translate(_CONTROL)
        self._lines.extend(part.translate(_CONTROL) for part in parts[1:])
        self._wrap_from(first)
        self._set_rows()
        if at_bottom:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        # Whether the view follows new text: at the end after this scroll (the user's or ours). Kept here, not
        # worked out at the next append, because the view shrinking (an agent's Q/K lines appearing above it)
        # moves the end away without anyone scrolling.
        self._at_end = new >= self.max_scroll_y - 1

    def on_resize(self) -> None:
        width = self._width()
        if width != self._wrap_width:
            self._wrap_width = width
            self._rewrap_all()
        if self._at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def render_lines(self, crop: Region) -> list[Strip]:
        # rich_style walks the DOM for the background: once per redraw, not once per row.
        self._frame = (self.rich_style, self.scroll_offset.y, self.scrollable_content_region.width)
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        style, top, width = self._frame or (self.rich_style, self.scroll_offset.y, self.scrollable_content_region.width)
        index = top + y
        if index >= len(self._rows):
            return Strip.blank(width, style)
        row = self._rows[index]
        found = find_all(row, self.highlight) if self.highlight else []
        if not found:
            # A stream following its end redraws the same rows one row higher: reuse their strips.
            key = (row, width, style)
            strip = self._strips.get(key)
            if strip is None:
                strip = self._strips[key] = Strip([Segment(row, style)]).crop_extend(0, width, style)
            return strip
        match = style + self.get_component_rich_style("stream-view--match")
        current = style + self.get_component_rich_style("stream-view--current")
        segments, at, size = [], 0, len(self.highlight)
        for col in found:
            segments.append(Segment(row[at:col], style))
            segments.append(Segment(row[col : col + size], current if self.current == (index, col) else match))
            at = col + size
        segments.append(Segment(row[at:], style))
        return Strip(segments).crop_extend(0, width, style)
