"""What the scripted server hears: a chat request parsed into who is calling, which call and round
(from the X-Swarm-Call header the client sends, core.llm.call_id), and what a method's demo script is.

Scripts (core.demo.scripts and each method's ``demo`` module) are functions of a RequestInfo, so they
depend on this module only, never on the server that calls them. It sits below the methods so that a
method package (a built-in one or a plugin) can ship its own script: the method's registration carries a
``MethodDemo`` and the scripted server asks it first for the method's own calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.llm.call_id import parse_call_id
from core.runtime.prompts import REPAIR_OPENING

_DOMAIN_RE = re.compile(r"solving one (code|math|general) problem")


@dataclass
class RequestInfo:
    role: str  # "" when the request names no call (no X-Swarm-Call header)
    call: str
    round: int
    domain: str
    is_repair: bool  # the last user message is a re-ask after a bad reply (core.runtime.prompts.repair_request)
    messages: list[dict[str, Any]]
    body: dict[str, Any]  # the full request body (temperature, max_tokens, response_format, …)

    @property
    def has_header(self) -> bool:
        return bool(self.role)


Script = Callable[[RequestInfo], str]  # returns the assistant message content


@dataclass(frozen=True)
class BenchAnswer:
    """What ``bench --demo``'s script stands behind for one dataset problem: its domain, the answer a
    competent team gives (code for HumanEval, a value for MATH), the code's entry point, and whether the
    script answers correctly (``correct=False`` checks scoring the other way)."""

    domain: str
    answer: str
    entry_point: str = ""
    correct: bool = True


@dataclass(frozen=True)
class MethodDemo:
    """A method's scripted replies (MethodInfo.demo): ``reply`` answers the method's own calls in
    ``--demo`` and returns None for a call that is not the method's (the shared round calls then get
    core.runtime.demo_scenarios' replies); ``bench_reply`` does the same about a benchmark problem."""

    reply: Callable[[RequestInfo], str | None]
    bench_reply: Callable[[RequestInfo, BenchAnswer], str | None] | None = None


def played_instead(script: Script, problem: str, domain: str) -> str:
    """The problem ``script`` plays when a run asks it for ``problem``: a short name, or "" when it plays
    that problem (or cannot say: a test's own script). Scripts that play fixed scenarios say so through a
    ``plays_instead(problem, domain)`` method (core.demo.scripts.DemoScript, the benchmark script)."""
    plays = getattr(script, "plays_instead", None)
    return str(plays(problem, domain)) if callable(plays) else ""


def text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def parse_request(body: dict[str, Any], call_header: str | None = None) -> RequestInfo:
    """The request's body and its X-Swarm-Call header value (None when it has none)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        messages = []
    messages = [m for m in messages if isinstance(m, dict)]
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    system = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "system")
    domain_match = _DOMAIN_RE.search(system)
    call = parse_call_id(call_header)
    return RequestInfo(
        role=call.role if call else "",
        call=call.call if call else "",
        round=call.round if call else 0,
        domain=domain_match[1] if domain_match else "code",
        # Not "more than one user message": an agent's conversation holds one per turn (core.runtime.conversation).
        is_repair=bool(users) and users[-1].startswith(REPAIR_OPENING),
        messages=messages,
        body=body,
    )


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)
