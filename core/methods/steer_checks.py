"""The checks every method's steering hook makes first: does the method take this action at all (its
catalogue entry, core.methods.registry.MethodInfo.steering), and are the agents it names in the team."""

from __future__ import annotations

from collections.abc import Iterable

from core.methods.registry import registered
from core.runtime.steering import SteerAction, unknown_agent


def refusal(method: str, action: SteerAction, agents: Iterable[str]) -> str:
    """The one-line reason to refuse ``action`` before the method looks at it, or ""."""
    info = registered().get(method)
    why = info.why_not(action.action) if info is not None else ""
    return why or unknown_agent(action, agents)
