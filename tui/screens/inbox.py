"""What one agent received: the messages routed to it, with sender and score, for the round shown.

Built from the round's MessagesRouted deliveries (RunModel keeps them per recipient). A message that
reached it before it worked is what it read this round; one delivered after its work (the round-1
broadcast, the single-pass barrier, an edge of a kept cycle) is read in the next round, so the round
before's late messages are shown too.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from ..model import RunModel


def inbox_sections(model: RunModel, agent: str, round_no: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """(heading, deliveries) for what ``agent`` had to read in round ``round_no``, and what reached it
    at that round's end."""
    sections: list[tuple[str, list[dict[str, Any]]]] = []
    before = model.rounds.get(round_no - 1)
    carried = [d for d in (before.inbox.get(agent, []) if before else []) if d.get("after_work")]
    if carried:
        sections.append((f"delivered at the end of round {round_no - 1}, read in round {round_no}", carried))
    rv = model.rounds.get(round_no)
    mine = rv.inbox.get(agent, []) if rv else []
    now = [d for d in mine if not d.get("after_work")]
    late = [d for d in mine if d.get("after_work")]
    if now:
        sections.append((f"routed to it in round {round_no}, before it worked", now))
    if late:
        sections.append((f"delivered at the end of round {round_no}, read in round {round_no + 1}", late))
    return sections


def inbox_count(model: RunModel, agent: str, round_no: int) -> int:
    return sum(len(d) for _, d in inbox_sections(model, agent, round_no))


def inbox_content(model: RunModel, agent: str, round_no: int) -> tuple[Content, str]:
    """(what the dialog shows, the same as plain text)."""
    title = f"{agent}'s inbox · round {round_no}"
    parts: list[Content] = [Content.styled(title, "bold")]
    plain = [title]
    sections = inbox_sections(model, agent, round_no)
    if agent == model.manager:
        note = "The Manager is not routed to: it reads every worker's output at the end of each round."
        parts.append(Content.styled(note, "$text-muted"))
        plain.append(note)
    elif not sections:
        note = ("nothing routed to it" if model.rounds.get(round_no) is not None else "no such round yet") + (
            " (no in-edge in this round's graph, or its senders had no output)" if round_no > 1 else "")
        parts.append(Content.styled(note, "$text-muted"))
        plain.append(note)
    for heading, deliveries in sections:
        parts.append(Content.styled(f"\n{heading} ({len(deliveries)}), strongest first:", "italic $text-muted"))
        plain.append(f"\n{heading}:")
        ordered = sorted(deliveries, key=lambda d: (-(d.get("score") or 0.0), str(d.get("src", ""))))
        for d in ordered:
            score = d.get("score")
            how = f"score {float(score):.2f}" if score is not None else "broadcast"
            parts.append(Content.assemble(("── from ", "$text-muted"), (str(d.get("src", "?")), "bold $accent"),
                                          (f" · {how} ──", "$text-muted")))
            parts.append(Content(str(d.get("content", "")).strip() or "(empty)"))
            plain.append(f"-- from {d.get('src', '?')} · {how}\n{str(d.get('content', '')).strip()}")
    return Content("\n").join(parts), "\n".join(plain)


class InboxScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,enter,q", "dismiss", "close", id="inbox_close", tooltip="Close the inbox"),
        Binding("c", "copy", "copy", id="inbox_copy", tooltip="Copy the inbox as text"),
    ]

    def __init__(self, model: RunModel, agent: str, round_no: int) -> None:
        super().__init__()
        self.agent, self.round_no = agent, round_no
        self.content, self.text = inbox_content(model, agent, round_no)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="inbox-dialog", can_focus=True):
            yield Static(self.content, id="inbox-body")

    def on_mount(self) -> None:
        self.query_one("#inbox-dialog").border_title = "inbox · esc closes · c copies"
        self.query_one("#inbox-dialog").focus()

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify(f"copied {len(self.text)} characters")
