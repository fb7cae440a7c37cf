"""TopoWeaver-R1's plan shape written with slots, and a plan that copied it (issue 44).

The paper's orchestrator prompt (TopoWeaver-R1 App. B.4) shows a filled example plan; a small model copies
it, and a copy of a filled example passes for a plan. Our prompt shows the plan's shape with angle-bracketed
slots instead (the same fields: difficulty, notes, steps, agents with id, type and ref), so a copy names no
agent at all and gives itself away: it is asked for once more, then the turn's plan is refused (core.runtime.
copies, core.runtime.calls).
"""

from __future__ import annotations

from typing import Any

from core.methods.topoweaver.plan import extract_yaml
from core.runtime.copies import folded_slots, is_slot
from core.runtime.parsing import TemplateCopied

DIFFICULTY_SLOT = "<introductory, interview or competition>"
NOTES_SLOT = "<one or two sentences for the team, or nothing>"
ID_SLOT = "<agent id>"
TYPE_SLOT = "<agent type>"
REF_SLOT = "<ids of agents in earlier steps>"
PLAN_SLOTS = (DIFFICULTY_SLOT, NOTES_SLOT, ID_SLOT, TYPE_SLOT, REF_SLOT)
_SLOTS = folded_slots(PLAN_SLOTS)

PLAN_SHAPE = f"""difficulty: {DIFFICULTY_SLOT}
notes: "{NOTES_SLOT}"
steps:
  - step: 1
    agents:
      - {{id: {ID_SLOT}, type: {TYPE_SLOT}, ref: []}}
      - {{id: {ID_SLOT}, type: {TYPE_SLOT}, ref: []}}
  - step: 2
    agents:
      - {{id: {ID_SLOT}, type: {TYPE_SLOT}, ref: [{REF_SLOT}]}}"""
SLOTS_NOTE = ("Write your own value in place of every <...> slot (as many steps and agents as the task needs); "
              "a plan that repeats a slot is refused.")
INSTEAD = "write your own plan for this problem: real agent ids, types and refs"


def _strings(value: Any, key: str = "") -> list[tuple[str, str]]:
    """Every (field name, text) in a loaded YAML document, nested lists and mappings included."""
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _strings(v, str(k).strip().lower())]
    if isinstance(value, list):
        return [pair for item in value for pair in _strings(item, key)]
    return [(key, value)] if isinstance(value, str) else []


def copied_plan_fields(reply: str) -> list[str]:
    """The plan's fields whose text is a slot of the shape ([] when the reply is no YAML at all: that is the
    validator's to say)."""
    import yaml  # as the validator: only a TopoWeaver-R1 run needs PyYAML

    text = extract_yaml(reply)
    if text is None:
        return []
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError, TypeError):
        return []
    return sorted({key or "plan" for key, value in _strings(data) if is_slot(value, _SLOTS)})


def plan_reply(reply: str) -> str:
    """The orchestrator call's parser: the reply as it came, unless its plan copied the shape's slots in any
    field but the optional notes (TemplateCopied)."""
    copied = [name for name in copied_plan_fields(reply) if name != "notes"]
    if copied:
        raise TemplateCopied(copied, INSTEAD)
    return reply
