"""The base of the panes that draw their own lines of Rich Text (the graph pane, DMoA's router view,
TopoDIM's typed graph): a focusable, scrolling pane around one Static, its text for copy and search, and
the running theme's colours for the drawing."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from .graph_render import plain
from .theme_colors import theme_color


class DrawingPane(VerticalScroll):
    ALLOW_MAXIMIZE = True

    def __init__(self, title: str, body_id: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="pane", can_focus=True)
        self.border_title = title
        self.body_id = body_id  # the Static the drawing goes in
        self._key: tuple[object, ...] | None = None  # what the drawing shown was made from
        self._lines: list[Text] = []

    def compose(self) -> ComposeResult:
        yield Static("", id=self.body_id)

    def copy_text(self) -> str:
        return plain(self._lines)

    @property
    def text(self) -> str:
        return self.copy_text()

    def _color(self, name: str, fallback: str) -> str:
        return theme_color(self.app, name, fallback)
