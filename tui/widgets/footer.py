"""A footer that wraps its keys onto several rows instead of hiding the ones that do not fit; on a
short terminal (under 30 rows) it keeps to one row: help, quit and the palette always, then as many
keys as fit, in order (every key is still in the help and the palette).

It is rebuilt only when the keys it shows change: Textual's Footer recomposes on every focus move
(the focused widget's bindings join the active ones), which mounted ~25 widgets per Tab.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

KEY_CELL = 10  # columns per key (compact keys: 'n phase', 'r reroute')
SHORT_HEIGHT = 30  # below this many rows: one row of keys
ALWAYS = ("help", "request_quit", "quit")  # actions a one-row footer never drops (with the palette)


class WrapFooter(Footer):
    DEFAULT_CSS = """
    WrapFooter {
        layout: grid;
        grid-gutter: 0 0;
        grid-columns: 10;
        overflow: hidden hidden;
        FooterKey { width: 1fr; margin: 0; }
        &.-compact FooterKey { margin: 0; }
        FooterKey.-command-palette { dock: none; border-left: none; padding-right: 0; }
    }
    """

    def __init__(self) -> None:
        super().__init__(compact=True)
        self._signature: tuple[object, ...] | None = None
        self._layout: tuple[int, int | None] | None = None
        self.hidden_keys = 0  # keys left out of a one-row footer

    def _limits(self) -> tuple[int, int | None]:
        """(keys per row, most rows or None for as many as needed)."""
        width, height = self.app.size
        return max(1, (width or 80) // KEY_CELL), (1 if (height or 40) < SHORT_HEIGHT else None)

    def compose(self) -> ComposeResult:
        children = list(super().compose())
        per_row, max_rows = self._layout = self._limits()
        self.hidden_keys = 0
        if max_rows is not None and len(children) > per_row * max_rows:
            children = self._pick(children, per_row * max_rows)
        self._fit(per_row, len(children))
        yield from children

    def _pick(self, children: list[Widget], room: int) -> list[Widget]:
        keep = [c for c in children if c.has_class("-command-palette") or getattr(c, "action", "") in ALWAYS]
        others = [c for c in children if c not in keep]
        chosen = set(others[: max(0, room - len(keep))]) | set(keep)
        self.hidden_keys = len(children) - len(chosen)
        return [c for c in children if c in chosen]

    def _fit(self, per_row: int, keys: int) -> None:
        self.styles.grid_size_columns = per_row
        self.styles.height = max(1, -(-keys // per_row))

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
        if self._layout is None or limits == self._layout:
            return
        if limits[1] is not None or self._layout[1] is not None:  # which keys fit depends on the size
            self._layout = limits
            self.call_after_refresh(self.recompose)
        else:  # re-wrap, or keys past the old row width would be cut off
            self._layout = limits
            self._fit(limits[0], len(self.children))

    def on_resize(self) -> None:
        self._screen_laid_out()
