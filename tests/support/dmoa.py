"""DMoA runs the request-log tests share: the LLM router, and a Selector that always picks the same two experts
(so each one's conversation grows step after step)."""

from __future__ import annotations

import json
from typing import Any

from core.demo.scripts import demo_script
from core.methods.dmoa.events import CALL_SELECT
from core.runtime.config import Settings
from core.runtime.scripted import RequestInfo


def same_two(info: RequestInfo) -> str:
    """The demo, except that the Selector picks the Developer and the Tester at every step."""
    if info.call == CALL_SELECT:
        return json.dumps({"agents": ["Developer", "Tester"], "weights": {"Developer": 0.6, "Tester": 0.4}})
    return demo_script(info)


def dmoa_settings(**options: Any) -> Settings:
    """A DMoA code run with the LLM router and ``options``."""
    return Settings(domain="code", strategy="dmoa", strategy_options={"dmoa": {"router": "llm", **options}})
