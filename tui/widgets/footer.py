"""A footer that wraps its keys onto several rows instead of hiding the ones that do not fit."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer

KEY_CELL = 10  # columns per key (compact keys: 'n phase', 'r reroute')


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

    def compose(self) -> ComposeResult:
        children = list(super().compose())
        self._fit(self.app.size.width or 80, len(children))
        yield from children

    def _fit(self, width: int, keys: int) -> None:
        per_row = max(1, width // KEY_CELL)
        self.styles.grid_size_columns = per_row
        self.styles.height = max(1, -(-keys // per_row))

    def on_resize(self) -> None:
        # The terminal changed size: re-wrap, or keys past the old row width would be cut off.
        self._fit(self.app.size.width or 80, len(self.children))
