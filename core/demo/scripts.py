"""The ``--demo`` script: which scripted reply answers a request, by the method that made the call.

Each method ships its own script (MethodInfo.demo: its package's ``demo`` module, or a plugin's); the
methods loaded in this process are asked first, in registration order, and the first that claims the
call answers it. Calls no method claims are the round calls every team method shares (the Manager's
plan and decision, descriptors, work), answered by core.runtime.demo_scenarios.
"""

from __future__ import annotations

from core.methods.catalogue import load_all
from core.methods.registry import registered
from core.runtime.demo_scenarios import DEMO_MODEL, DEMO_NAMES, DEMO_PROBLEMS, FINAL_CODE, demo_played, round_reply
from core.runtime.events import CallKind
from core.runtime.scripted import MethodDemo, RequestInfo

__all__ = ["DEMO_MODEL", "DEMO_NAMES", "DEMO_PROBLEMS", "FINAL_CODE", "demo_played", "demo_script", "method_demos"]

_SHARED_CALLS = frozenset(kind.value for kind in CallKind)


class DemoScript:
    """The ``--demo`` script: a Script (called per request) that can also say which problem it plays."""

    def __call__(self, info: RequestInfo) -> str:
        reply = _method_reply(info)
        if reply is None and info.call and info.call not in _SHARED_CALLS:
            # A method's own call from a run in another process (a test's server, bench's): its method is
            # not loaded here yet. Load them all, once, and ask again.
            load_all()
            reply = _method_reply(info)
        return reply if reply is not None else round_reply(info)

    @staticmethod
    def plays_instead(problem: str, domain: str) -> str:
        """The demo's own problem it plays when asked ``problem`` ("" when that is its own)."""
        return demo_played(problem, domain)


def method_demos() -> list[MethodDemo]:
    """The demo scripts of the methods loaded so far, in registration order (a script shared by several
    registrations, as the baselines' is, once)."""
    scripts: list[MethodDemo] = []
    for info in registered().values():
        script = info.demo_script()
        if script is not None and script not in scripts:
            scripts.append(script)
    return scripts


def _method_reply(info: RequestInfo) -> str | None:
    for script in method_demos():
        reply = script.reply(info)
        if reply is not None:
            return reply
    return None


demo_script = DemoScript()
