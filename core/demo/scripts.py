"""The ``--demo`` script: which scripted reply answers a request, by the method that made the call.

DyTopo and its baselines play core.demo.scenarios; DMoA, TopoWeaver-R1 and TopoDIM have scripts of
their own that build on the same scenarios.
"""

from __future__ import annotations

from core.demo.dmoa_script import dmoa_script
from core.demo.requests import RequestInfo
from core.demo.scenarios import DEMO_MODEL, DEMO_NAMES, DEMO_PROBLEMS, FINAL_CODE, demo_played, dytopo_reply
from core.demo.topodim_script import TOPODIM_CALLS, topodim_reply
from core.demo.topoweaver_script import topoweaver_script

__all__ = ["DEMO_MODEL", "DEMO_NAMES", "DEMO_PROBLEMS", "FINAL_CODE", "demo_played", "demo_script"]


class DemoScript:
    """The ``--demo`` script: a Script (called per request) that can also say which problem it plays."""

    def __call__(self, info: RequestInfo) -> str:
        return _reply(info)

    @staticmethod
    def plays_instead(problem: str, domain: str) -> str:
        """The demo's own problem it plays when asked ``problem`` ("" when that is its own)."""
        return demo_played(problem, domain)


def _reply(info: RequestInfo) -> str:
    """The scripted reply (a JSON string in core.runtime.prompts' contracts) for one request."""
    if info.call.startswith("dmoa-"):  # DMoA's calls (core.methods.dmoa.events.CALLS)
        return dmoa_script(info)
    if info.call.startswith("tw-"):  # TopoWeaver-R1's calls: YAML plans and plain-text agents
        return topoweaver_script(info)
    if info.call in TOPODIM_CALLS:
        reply = topodim_reply(info)
        if reply is not None:
            return reply
    return dytopo_reply(info)


demo_script = DemoScript()
