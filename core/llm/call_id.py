"""Which call a request is: the agent, the call kind and the round, sent as an HTTP header.

The scripted server (core.demo) reads it to pick its reply; a real model never sees it, so no prompt
carries test scaffolding (and no tokens are spent on it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CALL_ID_HEADER = "X-Swarm-Call"

_CALL_ID_RE = re.compile(r"^role=(?P<role>\w+); call=(?P<call>[\w-]+); round=(?P<round>\d+)$")


@dataclass(frozen=True)
class CallId:
    role: str
    call: str
    round: int

    def header_value(self) -> str:
        return f"role={self.role}; call={self.call}; round={self.round}"


def parse_call_id(value: str | None) -> CallId | None:
    """The call named by a header value, or None for a missing or malformed one."""
    match = _CALL_ID_RE.match((value or "").strip())
    if match is None:
        return None
    return CallId(match["role"], match["call"], int(match["round"]))
