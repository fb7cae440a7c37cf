"""The manager pane: every round's goal and the Manager's decision, newest first (so the live goal is
always in view without chasing the bottom); the viewed round highlighted and scrolled into view."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from core.runtime.events import CallStatus

from ..model import RoundView, RunModel, unit_mark


def round_entry(rv: RoundView, unit: str = "round") -> tuple[Content, str]:
    """(what the pane shows, plain text for copying) for one round (or step, or turn: the method's ``unit``)."""
    mark = unit_mark(unit, rv.number)  # DyTopo's "R2", TopoDIM's "step 1"
    if rv.goal_by_user:  # the round ran with the user's goal: say so, with the Manager's beside it
        parts = [Content.assemble((f"{mark} goal", "bold"), " ", ("✎ yours", "bold $warning"), " ", rv.goal)]
        plain = [f"{mark} goal ✎ yours: {rv.goal}"]
        if rv.replaced_goal:
            parts.append(Content.styled(f"   replaced the Manager's: {rv.replaced_goal}", "$text-muted"))
            plain.append(f"   replaced the Manager's: {rv.replaced_goal}")
    else:
        parts = [Content.assemble((f"{mark} goal", "bold"), " ", rv.goal or "…")]
        plain = [f"{mark} goal: {rv.goal}"]
    if rv.tests:
        parts.append(Content.styled(f"   tests: {rv.tests[-1]}", "$text-muted"))
        plain.append(f"   tests: {rv.tests[-1]}")
    d = rv.decision
    if d is not None:
        if d.terminate:
            line = Content.assemble(("   ✓ terminate", "bold $success"), f": {d.reasoning}")
        else:
            line = Content.assemble(("   → continue", "bold $primary"), f": {d.reasoning}")
        if d.status != CallStatus.DONE:
            line = line + Content.styled(f" [{d.status}]", "$error")
        parts.append(line)
        plain.append(f"   {'terminate' if d.terminate else 'continue'}: {d.reasoning}")
    return Content("\n").join(parts), "\n".join(plain)


class ManagerPane(VerticalScroll):
    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    ManagerPane > .round { padding: 0 0 0 0; }
    ManagerPane > .round.-viewed { background: $accent 20%; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="pane", can_focus=True)
        self.border_title = "manager"
        self._key: tuple[int, int] | None = None
        self._entries: dict[int, Static] = {}
        self._plain: dict[int, str] = {}

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("the Manager has not set a goal yet", id="manager-empty")

    def copy_text(self) -> str:
        return "\n".join(self._plain[n] for n in sorted(self._plain))

    def sync(self, model: RunModel, round_no: int) -> None:
        key = (model.rev, round_no)
        if key == self._key:
            return
        self._key = key
        unit = model.unit
        for number in sorted(model.rounds):
            content, plain = round_entry(model.rounds[number], unit)
            entry = self._entries.get(number)
            if entry is None:
                entry = Static(content, classes="round")
                self._entries[number] = entry
                self.mount(entry, after=self.query_one("#manager-empty"))  # newest first
            elif self._plain.get(number) != plain:
                entry.update(content)
            self._plain[number] = plain
            entry.set_class(number == round_no, "-viewed")
        for number in [n for n in self._entries if n not in model.rounds]:  # a replay stepped back
            self._entries.pop(number).remove()
            self._plain.pop(number, None)
        self.query_one("#manager-empty").display = not self._entries
        viewed = self._entries.get(round_no)
        if round_no == model.current:
            self.scroll_home(animate=False)
        elif viewed is not None:
            self.call_after_refresh(self.scroll_to_widget, viewed, animate=False, top=True)
