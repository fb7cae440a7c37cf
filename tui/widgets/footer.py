"""A footer that flows its keys onto several rows instead of hiding the ones that do not fit; on a
short terminal (under 30 rows) it keeps to one row: help, quit and the palette always, then as many
keys as fit, in order (every key is still in the help and the palette).

It is rebuilt only when the keys it shows change: Textual's Footer recomposes on every focus move
(the focused widget's bindings join the active ones), which mounted ~25 widgets per Tab.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import HorizontalGroup
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

SHORT_HEIGHT = 30  # below this many rows: one row of keys
ALWAYS = ("help", "request_quit", "quit")  # actions a one-row footer never drops (with the palette)
GAP = 2  # cells between two keys


def key_width(key: Widget) -> int:
    """Cells a compact FooterKey takes: its key, a space, its description."""
    display, description = str(getattr(key, "key_display", "")), str(getattr(key, "description", ""))
    return len(display) + (1 + len(description) if description else 0)


def flow(widths: list[int], width: int, gap: int = GAP) -> list[list[int]]:
    """Indexes of items laid out left to right in rows of ``width`` cells (``gap`` cells between items); an
    item wider than a row has a row of its own."""
    rows: list[list[int]] = [[]]
    used = 0
    for index, w in enumerate(widths):
        need = w + (gap if rows[-1] else 0)
        if rows[-1] and used + need > width:
            rows.append([])
            used, need = 0, w
        rows[-1].append(index)
        used += need
    return [row for row in rows if row]


class WrapFooter(Footer):
    DEFAULT_CSS = """
    WrapFooter {
        layout: vertical;
        overflow: hidden hidden;
        HorizontalGroup.footer-row { height: 1; width: 1fr; }
        FooterKey { width: auto; margin: 0 2 0 0; }
        &.-compact FooterKey { margin: 0 2 0 0; }
        FooterKey.-command-palette { dock: none; border-left: none; padding-right: 0; }
    }
    """

    def __init__(self) -> None:
        super().__init__(compact=True)
        self._signature: tuple[object, ...] | None = None
        self._layout: tuple[int, bool] | None = None
        self.hidden_keys = 0  # keys left out of a one-row footer

    def _limits(self) -> tuple[int, bool]:
        """(cells per row, one row only)."""
        width, height = self.app.size
        return max(10, width or 80), (height or 40) < SHORT_HEIGHT

    def compose(self) -> ComposeResult:
        keys = list(super().compose())
        width, one_row = self._layout = self._limits()
        self.hidden_keys = 0
        rows = flow([key_width(k) for k in keys], width)
        if one_row and len(rows) > 1:
            keys = self._pick(keys, width)
            rows = flow([key_width(k) for k in keys], width)[:1]
        self.styles.height = max(1, len(rows))
        for row in rows:
            yield HorizontalGroup(*(keys[i] for i in row), classes="footer-row")

    def _pick(self, keys: list[Widget], width: int) -> list[Widget]:
        """The keys of a one-row footer: help, quit and the palette, then the others in order while they fit."""
        keep = [k for k in keys if k.has_class("-command-palette") or getattr(k, "action", "") in ALWAYS]
        used = sum(key_width(k) + GAP for k in keep)
        chosen = set(keep)
        for key in keys:
            if key in chosen:
                continue
            if used + key_width(key) + GAP > width:
                break  # the first keys in order, not whichever small ones squeeze in
            chosen.add(key)
            used += key_width(key) + GAP
        self.hidden_keys = len(keys) - len(chosen)
        return [k for k in keys if k in chosen]

    def bindings_changed(self, screen: Screen[object]) -> None:
        signature = tuple(
            (b.key, b.action, b.description, enabled, tooltip)
            for _node, b, enabled, tooltip in screen.active_bindings.values()
            if b.show
        )
        if signature == self._signature and self._bindings_ready:
            return  # a focus move that changes no key shown: nothing to rebuild
        self._signature = signature
        super().bindings_changed(screen)

    def on_mount(self) -> None:
        super().on_mount()
        # The terminal's size, not only the footer's width: a taller terminal gets every key back.
        self.screen.screen_layout_refresh_signal.subscribe(self, self._screen_laid_out)

    def on_unmount(self) -> None:
        super().on_unmount()
        self.screen.screen_layout_refresh_signal.unsubscribe(self)

    def _screen_laid_out(self, _screen: object = None) -> None:
        limits = self._limits()
        if self._layout is not None and limits != self._layout:
            self._layout = limits
            self.call_after_refresh(self.recompose)  # re-flow, or keys past the old width would be cut off

    def on_resize(self) -> None:
        self._screen_laid_out()
