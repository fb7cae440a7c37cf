"""The help screen: every key of the screen below it, with what it does (keymap applied)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widgets import Static


def active_bindings(screen: Screen[object]) -> list[tuple[str, Binding]]:
    """(keys as displayed, binding) for the keys of ``screen`` and the app, after the keymap (not the
    focused widget's scrolling keys); a binding with several keys (e.g. ? and f1) is one row."""
    app = screen.app
    rows: dict[str, tuple[list[str], Binding]] = {}
    for key, active in screen.active_bindings.items():
        if active.node is not screen and active.node is not app:
            continue
        binding = active.binding
        ident = binding.id or f"{binding.action}"
        shown = app.get_key_display(replace(binding, key=key))
        if ident in rows:
            rows[ident][0].append(shown)
        else:
            rows[ident] = ([shown], binding)
    ordered = sorted(rows.values(), key=lambda row: row[1].id is None)  # the screen's own keys first
    return [(", ".join(keys), binding) for keys, binding in ordered]


NARROW = 100  # below this many columns the help lists each key on two lines


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "close", id="help_close", tooltip="Close help")]

    def __init__(self, target: Screen[Any]) -> None:
        super().__init__()
        self.target = target
        self.rows: list[tuple[str, str, str, str]] = []  # key, action, id, what it does

    def compose(self) -> ComposeResult:
        self.rows = [
            (keys, b.description or b.action, b.id or "", b.tooltip or b.description)
            for keys, b in active_bindings(self.target)
            if not b.system
        ]
        palette = getattr(self.target, "palette_commands", None)
        commands = [title for title, _help, _run in palette()] if palette is not None else []
        if commands:  # on the palette's own row: these have no key; ^p opens the palette, their name finds them
            said = "commands without a key, by name: " + "; ".join(commands)
            at = next((i for i, r in enumerate(self.rows) if r[1] == "palette"), None)
            if at is None:
                self.rows.append(("^p", "palette", "", said[0].upper() + said[1:]))
            else:
                keys, action, ident, what = self.rows[at]
                self.rows[at] = (keys, action, ident, f"{what}; {said}")
        self.table = table = self._two_lines() if self.app.size.width < NARROW else self._columns()
        with VerticalScroll(id="help-dialog", can_focus=True):
            yield Static(Content.from_markup("[b]Keys[/b] — rebind any of them by id under [b]keymap[/b] in the "
                                             "config file; ctrl+p opens the command palette; esc closes"),
                         id="help-title")
            yield Static(table, id="help-table")

    def _columns(self) -> RenderableType:
        table = Table(box=None, expand=True, header_style="bold", pad_edge=False)
        table.add_column("key", no_wrap=True)
        table.add_column("action", no_wrap=True)
        table.add_column("id", no_wrap=True, style="dim")
        table.add_column("what it does", ratio=1)
        for row in self.rows:
            table.add_row(*row)
        return table

    def _two_lines(self) -> RenderableType:
        """At a narrow width (80x24) a key per two lines: key, action and id, then what it does, indented and
        as wide as the dialog (in columns it had ~18 characters, each key wrapping over 3 to 5 lines)."""
        parts: list[RenderableType] = []
        for keys, action, ident, what in self.rows:
            parts.append(Text.assemble((keys, "bold"), "  ", action, "  ", (ident, "dim")))
            parts.append(Padding(Text(what), (0, 0, 0, 4)))
        return Group(*parts)

    def on_mount(self) -> None:
        self.query_one("#help-dialog").focus()
