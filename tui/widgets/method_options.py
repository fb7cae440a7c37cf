"""A method's own options as launch-form fields, generated from its options model (MethodInfo.options_model,
read as core.methods.registry.OptionSpec):
a field per option with its range in the label and its default as the placeholder; choices as a Select,
true/false as a Switch. Read back as text the method checks itself (MethodInfo.resolve), so the form's
messages are the command line's (``[strategy.dmoa] l_max must be between 1 and 50, got 80``).

A call kind's max_tokens and temperature (DyTopo's manager_max_tokens, ...) are left to the config file:
six more fields per method would bury the ones that change what the method does.
"""

from __future__ import annotations

from typing import Any

from textual.widget import Widget
from textual.widgets import Input, Label, Select, Switch

FIELD_PREFIX = "opt-"


def form_options(info: Any) -> list[Any]:
    """The OptionSpecs the form shows for a MethodInfo (not the call kinds' limits)."""
    return [spec for spec in info.options if not spec.call_table] if info is not None else []


def label_text(spec: Any) -> str:
    """``l_max (1..50)``: the name and, where it has them, its bounds or its choices' count."""
    if spec.kind in ("int", "float") and (spec.low is not None or spec.high is not None):
        low = "" if spec.low is None else f"{spec.low:g}"
        high = "" if spec.high is None else f"{spec.high:g}"
        return f"{spec.name} ({low}..{high})"
    return spec.name


def option_fields(info: Any, given: dict[str, Any]) -> list[Widget]:
    """Label, field, label, field, ... for the method's options; ``given``: values already chosen (the config
    file's [strategy.NAME] table), shown in place of the defaults."""
    widgets: list[Widget] = []
    for spec in form_options(info):
        value = given.get(spec.name, spec.default)
        widgets.append(Label(label_text(spec), classes="opt-label"))
        ident = f"{FIELD_PREFIX}{spec.name}"
        field: Widget
        if spec.kind == "choice":
            field = Select([(c, c) for c in spec.choices], value=value if value in spec.choices else spec.default,
                           allow_blank=False, id=ident)
        elif spec.kind == "bool":
            field = Switch(bool(value), id=ident)
        else:
            shown = "" if value is None or value == spec.default else str(value)
            default = "" if spec.default is None else str(spec.default)
            field = Input(shown, placeholder=default or spec.help[:40], id=ident,
                          type="integer" if spec.kind == "int" else "number" if spec.kind == "float" else "text")
        field.tooltip = spec.help
        widgets.append(field)
    return widgets


def read_options(info: Any, screen: Widget) -> dict[str, Any]:
    """The options set on the form (an empty text field: its default), as the method's resolve takes them."""
    out: dict[str, Any] = {}
    for spec in form_options(info):
        found = screen.query(f"#{FIELD_PREFIX}{spec.name}")
        if not found:
            continue
        field = found.first()
        if isinstance(field, Select):
            out[spec.name] = str(field.value)
        elif isinstance(field, Switch):
            out[spec.name] = field.value
        elif isinstance(field, Input) and field.value.strip():
            out[spec.name] = field.value.strip()
    return out
