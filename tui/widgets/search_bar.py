"""The search bar of the run and replay screens: a one-line input above the footer.

Typing searches the agents' output at once (the focused pane first, then the others in order);
enter or ↓ goes to the next match, ↑ to the previous one, esc closes the bar. The screen does the
searching (``run_search``, ``search_step``, ``end_search``); the bar only says what to look for.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Input, Label

SEARCH_BAR_BINDINGS = [
    Binding("escape", "close", "close", id="search_close", tooltip="Close the search"),
    Binding("down", "step(1)", "next", id="search_bar_next", tooltip="Next match"),
    Binding("up", "step(-1)", "previous", id="search_bar_prev", tooltip="Previous match"),
]


class SearchBar(Horizontal):
    BINDINGS: ClassVar[list[BindingType]] = [*SEARCH_BAR_BINDINGS]
    DEFAULT_CSS = """
    SearchBar {
        height: 1;
        display: none;
        background: $panel;
        &.-open { display: block; }
        #search-prompt { width: auto; padding: 0 1; color: $accent; text-style: bold; }
        #search-input { width: 1fr; height: 1; border: none; padding: 0; background: $panel; }
        #search-status { width: auto; padding: 0 1; color: $text-muted; }
    }
    """

    def compose(self) -> ComposeResult:
        yield Label("search", id="search-prompt")
        yield Input(placeholder="text in the agents' output (enter/↓ next, ↑ previous, esc closes)",
                    id="search-input", compact=True)
        yield Label("", id="search-status")

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    @property
    def text(self) -> str:
        return self.query_one(Input).value

    def open(self) -> None:
        self.add_class("-open")
        box = self.query_one(Input)
        box.focus()
        box.select_all()

    def status(self, text: str) -> None:
        self.query_one("#search-status", Label).update(text)

    @on(Input.Changed, "#search-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.screen.run_search(event.value)  # type: ignore[attr-defined]

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.screen.search_step(1)  # type: ignore[attr-defined]

    def action_step(self, step: int) -> None:
        self.screen.search_step(step)  # type: ignore[attr-defined]

    def action_close(self) -> None:
        self.screen.end_search()  # type: ignore[attr-defined]
