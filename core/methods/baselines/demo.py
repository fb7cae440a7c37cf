"""The scripted model's reply to the single-agent baseline (``--demo --strategy single``).

The graph baselines (single-turn, random, broadcast, chain, star) make the round calls every team method
shares, so core.runtime.demo_scenarios answers them; only ``single``'s one call is the baselines' own.
"""

from __future__ import annotations

import json

from core.methods.baselines.method import CALL_SINGLE
from core.runtime.config import DomainName
from core.runtime.demo_scenarios import FINAL_CODE, SCENARIOS
from core.runtime.scripted import MethodDemo, RequestInfo


def single_reply(info: RequestInfo) -> str | None:
    """The single agent's whole answer (code in a fence, math as JSON); None for any other call."""
    if info.call != CALL_SINGLE:
        return None
    scenario = SCENARIOS.get(info.domain, SCENARIOS[DomainName.CODE])
    if info.domain == DomainName.MATH:
        return json.dumps({"reasoning": "Evaluate each term and add them.", "answer": scenario.final_answer})
    if info.domain == DomainName.CODE:
        return f"Here is the complete solution.\n\n```python\n{FINAL_CODE.rstrip()}\n```"
    return scenario.final_answer


DEMO = MethodDemo(single_reply)
