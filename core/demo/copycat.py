"""The scripted server's "copycat": a model that answers every call with the reply shape its prompt shows.

Small local models (SmolLM2-135M on llama-server, issue 44) do exactly this: every worker's reply is the work
shape, every descriptor the descriptor shape, the Manager's decision the Manager's shape, slots and all. The
app must count none of them as parsed, route nothing, and end without an answer (core.runtime.copies).
"""

from __future__ import annotations

import re

from core.runtime.events import CallKind
from core.runtime.scripted import RequestInfo, text_of

# A shape as the prompts show it (core.runtime.prompts): a JSON object after "Use exactly this shape:", its
# closing brace alone on a line.
_SHAPE_RE = re.compile(r"Use exactly this shape:\n(\{.*?\n\})", re.S)


def copycat_script(info: RequestInfo) -> str:
    """The shape this call was shown (the last one with the call's own field), copied verbatim."""
    text = "\n".join(text_of(m.get("content")) for m in info.messages if m.get("role") in ("system", "user"))
    shapes: list[str] = _SHAPE_RE.findall(text)
    field = ("goal" if info.call in (CallKind.PLAN, CallKind.MANAGER)
             else "query" if info.call == CallKind.DESCRIPTORS else "public")
    mine = [shape for shape in shapes if f'"{field}"' in shape and (field != "query" or '"public"' not in shape)]
    return (mine or shapes or ["{}"])[-1]
