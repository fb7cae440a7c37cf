"""The steering dialog: one action on the running team, applied at the next barrier (docs/steering.md).

The dialog offers only the actions the run's method supports (its catalogue entry) and only the fields
the chosen action needs. What it returns is a dict in the control-file schema, so the screen hands it to
``core.runtime.steering.parse_action`` exactly as a control file's line would be: one validation, one set
of messages for the TUI, the headless control file and MCP.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static, TextArea

from core.runtime.steering import REQUIRED, SteerError, SteerKind, parse_action

# What each action is called in the dialog, in the order it offers them.
ACTION_LABELS: dict[str, str] = {
    "note": "note to an agent",
    "goal": "new goal for the next round",  # the hint says "the next round" too: one wording
    "pin": "pin an edge (always routed)",
    "cut": "cut an edge (never routed)",
    "release": "release a pinned or cut edge",
    "silence": "silence an agent",
    "restore": "bring a silenced agent back",
    "retry": "retry an agent's last turn",
    "replace": "replace an agent's last output",
    "agent": "change an agent's model or temperature",
    "plan": "edit the Orchestrator's plan (YAML)",
    "edge_add": "add a typed edge",
    "edge_remove": "remove a typed edge",
    "force": "force an agent into the next step",
    "exclude": "exclude an agent from the next step",
    "stop": "stop now with the best answer so far",
    "continue": "one more round (veto the stop)",
}

# The fields each action asks for (the rest are hidden).
_FIELDS: dict[str, tuple[str, ...]] = {
    "note": ("to", "text", "when"),
    "goal": ("long_text",),
    "pin": ("src", "dst", "rounds"),
    "cut": ("src", "dst", "rounds"),
    "release": ("src", "dst"),
    "silence": ("agent",),
    "restore": ("agent",),
    "retry": ("agent",),
    "replace": ("agent", "long_text"),
    "agent": ("agent", "model", "temperature"),
    "plan": ("long_text",),
    "edge_add": ("src", "dst", "edge_type"),
    "edge_remove": ("src", "dst"),
    "force": ("agent",),
    "exclude": ("agent",),
    "stop": (),
    "continue": (),
}
_ALL_FIELDS = ("to", "agent", "src", "dst", "text", "long_text", "when", "rounds", "model", "temperature",
               "edge_type")
# TopoDIM's edge types (TopoDIM: One-shot Topology Generation of Diverse Interaction Modes, §3).
TYPED_EDGE_KINDS = ("conditioned", "feedback", "debate")


@dataclass(frozen=True)
class SteerContext:
    """What the dialog needs to know of the run: the actions its method supports, who is in the team,
    and the defaults (the focused agent, the text to start from)."""

    actions: Sequence[str]
    agents: Sequence[str]
    focused: str = ""
    initial: str = "note"
    long_texts: dict[str, str] | None = None  # action -> the text its editor starts with (goal, plan, replace)
    title: str = "steer the team"


def request_of(action: str, values: dict[str, str]) -> dict[str, Any]:
    """The control-file line (as a dict) for ``action`` with the dialog's field values; empty fields are
    left out so the one validator (core.runtime.steering.parse_action) says what is missing."""
    request: dict[str, Any] = {"action": action}
    for name in _FIELDS.get(action, ()):
        value = values.get(name, "")
        if name == "long_text":  # a plan keeps its indentation; the validator refuses an empty text
            request["text"] = value if action == "plan" else value.strip()
            continue
        value = value.strip()
        if not value:
            continue
        if name in ("rounds", "temperature"):
            request[name] = _number(value, integer=name == "rounds")
        else:
            request["type" if name == "edge_type" else name] = value
    return request


# What a missing field means, in the dialog's words (the control file's message names JSON keys).
_MISSING: dict[str, str] = {
    "to": "pick whom the note is for",
    "agent": "pick the agent to {action}",
    "src": "pick the agent the edge comes from",
    "dst": "pick the agent the edge goes to",
    "type": "pick the edge's type",
}
_EMPTY_TEXT: dict[str, str] = {
    "note": "type the note",
    "goal": "type the new goal",
    "replace": "type the output that stands for the agent's",
    "plan": "the plan is empty: edit it, or esc to keep the Orchestrator's",
}


def field_refusal(request: dict[str, Any]) -> tuple[str, str]:
    """(the dialog's field, what to do, in plain words) when the request would be refused as it stands;
    ("", "") when the one validator (parse_action) takes it. A field's own words first; else the validator's
    message, put next to the field it names."""
    action = str(request.get("action", ""))
    kind = SteerKind(action)
    for key in REQUIRED[kind]:
        if key not in request or (key == "text" and not str(request[key]).strip()):
            field = "long_text" if key == "text" and "long_text" in _FIELDS[action] else key
            words = _EMPTY_TEXT.get(action, "type the text") if key == "text" else _MISSING[key]
            return ("edge_type" if field == "type" else field), words.format(action=action)
    if kind is SteerKind.AGENT and not {"model", "temperature"} & set(request):
        return "model", "give the agent a new model or temperature"
    try:
        parse_action(request)
    except SteerError as exc:
        message = str(exc)
        for name in ("rounds", "temperature", "model", "endpoint"):
            if f'"{name}"' in message:
                return name, message.split(" (", 1)[0].replace(f'"{name}"', name)
        return "", message.split(" (", 1)[0]
    return "", ""


def _number(text: str, *, integer: bool) -> Any:
    """The number typed, or the text itself (the validator then says what it expected)."""
    try:
        return int(text) if integer else float(text)
    except ValueError:
        return text


class LongText(TextArea):
    """The dialog's multi-line editor (a goal, a plan, a replaced output): ctrl+a selects all, so a new text
    replaces the old in one key (TextArea's own ctrl+a goes to the line's start; home still does)."""

    BINDINGS = [Binding("ctrl+a", "select_all", "select all", id="steer_select_all", show=False,
                        tooltip="Select the whole text: what you type next replaces it")]


class SteerScreen(ModalScreen[dict[str, Any] | None]):
    """Pick an action, fill its fields, enter (or ctrl+s in a multi-line editor) sends, esc closes."""

    BINDINGS = [
        Binding("escape", "dismiss(None)", "close", id="steer_close", tooltip="Close without steering"),
        Binding("ctrl+s", "send", "send", id="steer_send", tooltip="Send the action (applies at the next barrier)"),
    ]

    def __init__(self, context: SteerContext) -> None:
        super().__init__()
        self.context = context
        self.action_name = context.initial if context.initial in context.actions else context.actions[0]

    def compose(self) -> ComposeResult:
        ctx = self.context
        agents = [(name, name) for name in ctx.agents]
        focused = ctx.focused if ctx.focused in ctx.agents else None
        with Vertical(id="steer-dialog"):
            yield Label(ctx.title, id="steer-title")
            yield Select([(ACTION_LABELS.get(a, a), a) for a in ctx.actions], value=self.action_name,
                         allow_blank=False, id="steer-action")
            with Horizontal(classes="steer-row"):
                yield Select([("all agents", "all"), *agents], value=focused or "all", allow_blank=False,
                             id="steer-to", prompt="to")
                yield Select(agents, value=focused or Select.NULL, id="steer-agent", prompt="agent")
                yield Select(agents, id="steer-src", prompt="from (src)")
                yield Select(agents, id="steer-dst", prompt="to (dst)")
                yield Select([("next call", "next"), ("now (ask again)", "now")], value="next", allow_blank=False,
                             id="steer-when")
                yield Select([(k, k) for k in TYPED_EDGE_KINDS], value=TYPED_EDGE_KINDS[0], allow_blank=False,
                             id="steer-edge_type")
            with Horizontal(classes="steer-row"):
                yield Input(placeholder="rounds (empty: until released)", type="integer", id="steer-rounds")
                yield Input(placeholder="model (empty: unchanged)", id="steer-model")
                yield Input(placeholder="temperature", id="steer-temperature")
            yield Input(placeholder="the note (enter sends)", id="steer-text")
            yield LongText(id="steer-long_text", soft_wrap=True)
            yield Static("", id="steer-error", markup=False)
            yield Static("", id="steer-hint")
            with Horizontal(id="steer-buttons"):
                yield Button("Send (enter / ctrl+s)", variant="primary", id="steer-send")
                yield Button("Cancel (esc)", id="steer-cancel")

    def on_mount(self) -> None:
        self._show_fields()

    def _show_fields(self) -> None:
        wanted = set(_FIELDS.get(self.action_name, ()))
        for name in _ALL_FIELDS:
            self.query_one(f"#steer-{name}").display = name in wanted
        for row in self.query(".steer-row"):
            row.display = any(child.display for child in row.children)
        long_texts = self.context.long_texts or {}
        if "long_text" in wanted:
            area = self.query_one("#steer-long_text", TextArea)
            area.load_text(long_texts.get(self.action_name, ""))
            if self.action_name == "goal":  # a new goal replaces the old: the first key typed replaces it all
                area.select_all()
        hint = {
            "note": self._note_hint(),
            "goal": "every worker gets it in the next round, in place of the Manager's; typing replaces the "
                    "text (selected), ctrl+a selects it all again; ctrl+s sends",
            "pin": "in every graph from the next on (counts toward k_in); a pin that closes a cycle is refused",
            "cut": "kept out of every graph from the next on, whatever its score",
            "replace": "this text stands for the agent's output before it is routed; ctrl+s sends",
            "plan": "the plan runs as edited if it validates; otherwise the old plan stays; ctrl+s sends",
            "stop": "ends the run at the next barrier with the best answer so far",
            "continue": "the Manager's next decision to stop is overruled once",
        }.get(self.action_name, "applies at the next barrier")
        self.query_one("#steer-hint", Static).update(hint)
        self._show_refusal("", "")
        self._focus_first(wanted)

    def _note_hint(self) -> str:
        if self.query_one("#steer-to", Select).value == "all":
            return "delivered in every agent's next call, from User"
        return "delivered in that agent's next call, from User; only it sees the note"

    def _show_refusal(self, field: str, words: str) -> None:
        """A refusal stays in the dialog: under the fields, the field it is about marked and focused."""
        error = self.query_one("#steer-error", Static)
        error.update(f"✗ {words}" if words else "")
        error.display = bool(words)
        for name in _ALL_FIELDS:
            self.query_one(f"#steer-{name}").set_class(name == field, "-invalid")
        if field:
            self.query_one(f"#steer-{field}").focus()

    def _focus_first(self, wanted: set[str]) -> None:
        for name in ("text", "long_text", "src", "agent", "to"):
            if name in wanted:
                self.query_one(f"#steer-{name}").focus()
                return
        self.query_one("#steer-send", Button).focus()

    def on_select_changed(self, message: Select.Changed) -> None:
        if message.select.id == "steer-action" and isinstance(message.value, str):
            self.action_name = message.value
            self._show_fields()
        elif message.select.id == "steer-to" and self.action_name == "note":
            self.query_one("#steer-hint", Static).update(self._note_hint())

    def values(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for name in _ALL_FIELDS:
            widget = self.query_one(f"#steer-{name}")
            if isinstance(widget, Select):
                value = widget.value
                values[name] = value if isinstance(value, str) else ""
            elif isinstance(widget, Input):
                values[name] = widget.value
            elif isinstance(widget, TextArea):
                values[name] = widget.text
        return values

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        self.action_send()

    def on_button_pressed(self, message: Button.Pressed) -> None:
        if message.button.id == "steer-send":
            self.action_send()
        else:
            self.dismiss(None)

    def action_send(self) -> None:
        request = request_of(self.action_name, self.values())
        field, words = field_refusal(request)
        if words:  # the inputs stay; the person fixes the field and sends again
            self._show_refusal(field, words)
            return
        self.dismiss(request)
