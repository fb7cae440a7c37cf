"""The manager pane: every round's goal and the Manager's decision; the viewed round highlighted."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from ..model import RunModel


class ManagerPane(VerticalScroll):
    ALLOW_MAXIMIZE = True

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="pane", can_focus=True)
        self.border_title = "manager"
        self._key: tuple[int, int] | None = None
        self._text = ""

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("", id="manager-body")

    def copy_text(self) -> str:
        return self._text

    def sync(self, model: RunModel, round_no: int) -> None:
        key = (model.rev, round_no)
        if key == self._key:
            return
        self._key = key
        parts: list[Content] = []
        plain: list[str] = []
        for number in sorted(model.rounds):
            rv = model.rounds[number]
            current = number == round_no
            goal_style = "bold reverse $accent" if current else "bold"
            parts.append(Content.assemble((f"R{number} goal", goal_style), " ", rv.goal or "…"))
            plain.append(f"R{number} goal: {rv.goal}")
            if rv.tests:
                parts.append(Content.styled(f"   tests: {rv.tests[-1]}", "$text-muted"))
            d = rv.decision
            if d is not None:
                if d.terminate:
                    line = Content.assemble(("   ✓ terminate", "bold $success"), f": {d.reasoning}")
                else:
                    line = Content.assemble(("   → continue", "bold $primary"), f": {d.reasoning}")
                if d.status != "done":
                    line = line + Content.styled(f" [{d.status}]", "$error")
                parts.append(line)
                plain.append(f"   {'terminate' if d.terminate else 'continue'}: {d.reasoning}")
        if not parts:
            parts.append(Content.styled("the Manager has not set a goal yet", "italic"))
        self._text = "\n".join(plain)
        self.query_one("#manager-body", Static).update(Content("\n").join(parts))
        if round_no == model.current:
            self.scroll_end(animate=False)
