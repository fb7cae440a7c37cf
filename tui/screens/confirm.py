"""A yes/no question (quitting while a swarm runs)."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [
        Binding("y", "answer(True)", "yes", id="confirm_yes", tooltip="Yes"),
        Binding("n,escape", "answer(False)", "no", id="confirm_no", tooltip="No, go back"),
    ]

    def __init__(self, question: str, on_answer: Callable[[bool], object] | None = None) -> None:
        """``on_answer`` runs before the dialog closes (the screen below is not redrawn first: quitting
        from here is immediate); without it the answer is the screen's result, as usual."""
        super().__init__()
        self.question = question
        self.on_answer = on_answer

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.question, id="question")
            with Horizontal(id="buttons"):
                yield Button("Yes (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_answer(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        if self.on_answer is not None:
            self.on_answer(yes)
            if self.app._exit:  # quitting: leave the dialog up rather than redraw the screen below
                return
        self.dismiss(yes)
