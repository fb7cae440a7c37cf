"""A final answer comes only from a model's reply that passes the domain's answer check, never from text the
app wrote: a reply that echoes a re-ask or a system prompt, or code that does not parse, ends with no answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.demo.scripts import demo_script
from core.demo.server import RequestInfo, ScriptedServer
from core.runtime.answers import SOURCE_NONE, honest_answer
from core.runtime.config import Settings
from core.runtime.prompts import repair_request
from tests.support.engine import run_swarm

SYSTEM = "You are the Manager of a team solving one code problem. Reply with ONLY one JSON object in this shape."


@pytest.mark.parametrize(
    ("answer", "domain", "kept"),
    [
        ("```python\ndef add(a, b):\n    return a + b\n```", "code", True),
        ("def add(a, b):\n    return a + b", "code", True),
        ("```python\ndef add(a, b) return\n```", "code", False),  # does not parse
        ("The function adds two numbers.", "code", False),  # prose, no code
        ("\\frac{14}{3}", "math", True),
        ("The answer is $\\boxed{391}$.", "math", True),
        ('{\n  "type": "json",\n  "data": {"x": 1}\n}', "math", False),  # a small model's stray JSON
        ("I'm glad to be a part of this journey.", "math", False),  # a sentence, not an expression
        ("", "math", False),
        (repair_request("the reply was cut off"), "general", False),  # the app's own re-ask
        (SYSTEM, "general", False),  # an echo of a system prompt
        ("Paris is the capital.", "general", True),
    ],
)
def test_the_answer_check(answer: str, domain: str, kept: bool) -> None:
    got, source, why = honest_answer(answer, "manager", domain, [SYSTEM])
    assert (got == answer and source == "manager" and not why) if kept else (got == "" and source == SOURCE_NONE)


def _echoing_manager(info: RequestInfo) -> str:
    """The demo's replies, but the Manager's final answer repeats the app's re-ask text."""
    reply = demo_script(info)
    if info.role == "Manager" and info.call == "manager":
        data = json.loads(reply)
        if data.get("terminate"):
            data["final_answer"] = repair_request("the reply did not parse")
        return json.dumps(data)
    return reply


async def test_a_run_never_presents_the_apps_own_text_as_the_answer(embedder: Any) -> None:
    with ScriptedServer(_echoing_manager) as server:
        finished, events, _ = await run_swarm(server, embedder, settings=Settings(domain="math"))
    assert finished.final_answer == "" and finished.answer_source == SOURCE_NONE
    assert any("text the app wrote" in getattr(e, "message", "") for e in events)
