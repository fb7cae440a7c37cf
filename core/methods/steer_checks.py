"""The checks every method's steering hook makes first: does the method take this action at all (its
catalogue entry, core.methods.registry.MethodInfo.steering), and are the agents it names in the team."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from core.methods.registry import registered
from core.runtime.control import RunControl
from core.runtime.steering import SteerAction, SteerKind, unknown_agent


def refusal(method: str, action: SteerAction, agents: Iterable[str]) -> str:
    """The one-line reason to refuse ``action`` before the method looks at it, or ""."""
    info = registered().get(method)
    why = info.why_not(action.action) if info is not None else ""
    return why or unknown_agent(action, agents)


def catalogue_hook(method: str, control: RunControl) -> Callable[[SteerAction], str | None]:
    """The steering hook of a method that sets none of its own: stop ends the run, anything else is refused
    with the catalogue's reason (``single cannot take note: ...``)."""

    def hook(action: SteerAction) -> str | None:
        why = refusal(method, action, [])
        if why or action.action is not SteerKind.STOP:
            return why or control.no_steering
        control.stop()
        return ""

    return hook
