"""The help screen: every key of the screen below it, with what it does (keymap applied)."""

from __future__ import annotations

from dataclasses import replace

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static


def active_bindings(screen: Screen[object]) -> list[tuple[str, Binding]]:
    """(keys as displayed, binding) for every binding active on ``screen``, after the keymap; a binding
    with several keys (e.g. ? and f1) is one row."""
    app = screen.app
    rows: dict[str, tuple[list[str], Binding]] = {}
    for key, active in screen.active_bindings.items():
        binding = active.binding
        ident = binding.id or f"{binding.action}"
        shown = app.get_key_display(replace(binding, key=key))
        if ident in rows:
            rows[ident][0].append(shown)
        else:
            rows[ident] = ([shown], binding)
    return [(", ".join(keys), binding) for keys, binding in rows.values()]


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "close", id="help_close", tooltip="Close help")]

    def __init__(self, target: Screen[object]) -> None:
        super().__init__()
        self.target = target

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static(Content.from_markup("[b]Keys[/b]  (rebind any of them by id under [b]keymap[/b] in the "
                                             "config file; ctrl+p opens the command palette)"), id="help-title")
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("key", "action", "id", "what it does")
        for label, binding in active_bindings(self.target):
            if binding.system:
                continue
            table.add_row(label, binding.description or binding.action, binding.id or "", binding.tooltip or binding.description)
        table.focus()
