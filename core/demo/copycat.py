"""The scripted server's "copycat": a model that answers every call with the reply shape its prompt shows.

Small local models (SmolLM2-135M on llama-server, issue 44) do exactly this: every worker's reply is the work
shape, every descriptor the descriptor shape, the Manager's decision the Manager's shape, slots and all; a
TopoWeaver-R1 orchestrator copies its plan's shape, a DMoA Selector or a TopoDIM coordinator their JSON
shapes. A call that shows no shape (a plain-text answer, a review, a summary) gets its own instruction back,
the way such a model repeats what it was told. The app must count none of them as parsed, route or aggregate
nothing, and end without an answer (core.runtime.copies).
"""

from __future__ import annotations

import re

from core.runtime.events import CallKind
from core.runtime.prompts import REPAIR_OPENING
from core.runtime.scripted import RequestInfo, text_of

# A shape as DyTopo's prompts show it (core.runtime.prompts): a JSON object after "Use exactly this shape:", its
# closing brace alone on a line.
_SHAPE_RE = re.compile(r"Use exactly this shape:\n(\{.*?\n\})", re.S)
# Any other method's shape: after "this shape:", a fenced block or a JSON object.
_ANY_SHAPE_RE = re.compile(r"this shape:\s*(```\w*\n.*?\n```|\{.*)", re.S)


def copycat_script(info: RequestInfo) -> str:
    """The shape this call was shown (the last one with the call's own field), copied verbatim; with no shape,
    the call's own ask."""
    told = [text_of(m.get("content")) for m in info.messages if m.get("role") in ("system", "user")]
    text = "\n".join(told)
    shapes: list[str] = _SHAPE_RE.findall(text)
    if shapes:
        field = ("goal" if info.call in (CallKind.PLAN, CallKind.MANAGER)
                 else "query" if info.call == CallKind.DESCRIPTORS else "public")
        mine = [shape for shape in shapes if f'"{field}"' in shape and (field != "query" or '"public"' not in shape)]
        return (mine or shapes)[-1]
    other = _ANY_SHAPE_RE.findall(text)
    if other:
        return _balanced(other[-1])
    asks = [t for t in told[1:] if not t.startswith(REPAIR_OPENING)] or told
    return _last_line(asks[-1] if asks else "")


def _balanced(shape: str) -> str:
    """A fenced block as it stands; a JSON object up to its closing brace."""
    if shape.startswith("```"):
        return shape
    depth = 0
    for i, char in enumerate(shape):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0:
            return shape[: i + 1]
    return shape


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "{}"
