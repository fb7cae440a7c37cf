"""The faults a scripted server can inject (per role, call and round) to exercise the engine's error paths:
their kinds and the rule that picks the requests they hit."""

from __future__ import annotations

from dataclasses import dataclass

from core.runtime.scripted import RequestInfo

FAULT_KINDS = (
    "malformed",  # prose with no JSON at all: no repair can fix it
    "repairable",  # broken JSON (unquoted keys, single quotes, trailing comma, cut-off end) json-repair fixes
    "fenced",  # valid JSON inside ```json fences, with a line of prose before it
    "think",  # <think>…</think> (with braces inside) and prose, then valid JSON
    "missing_fields",  # valid JSON without query/key (workers) or goal (Manager)
    "http_429",
    "http_500",
    "http_401",  # the key is refused
    "http_403",  # forbidden, with a message that echoes the bearer key back (as some proxies do)
    "http_404",  # no such model
    "stall",  # headers and one chunk, then silence for stall_seconds, then the rest
    "drop",  # part of the reply, then the connection is closed mid-body
    "reject_response_format",  # 400 when the request asks for response_format (no JSON mode)
    "reject_json_schema",  # 400 when the request asks for response_format of type json_schema (JSON mode is fine)
    "truncated",  # the first half of the reply, ending with finish_reason "length" (cut off at max_tokens)
    "stream_error",  # one chunk, then an {"error": ...} event inside the stream (as OpenAI sends one)
    "garbage_chunk",  # one chunk, then a data line that is not JSON (and holds an escape sequence)
    "reset",  # the connection is reset (RST) before any answer, the request read
    "endless",  # the reply, then more text without end, a chunk every ``interval`` seconds (ignores max_tokens)
)


@dataclass
class FaultRule:
    kind: str  # one of FAULT_KINDS
    role: str | None = None  # None = any
    call: str | None = None
    round: int | None = None
    times: int = 1  # matching requests it applies to before it is used up; <= 0 means never used up
    retry_after: float | None = None  # http_429: the Retry-After it sends, in seconds (default: retry at once)
    send_retry_after: bool = True  # http_429: False sends no Retry-After at all (a busy local server)
    interval: float = 0.0  # endless: seconds between its chunks (0: as fast as it can; a trickle above)

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}: choose one of {', '.join(FAULT_KINDS)}")

    def matches(self, info: RequestInfo) -> bool:
        if self.kind == "reject_response_format" and "response_format" not in info.body:
            return False
        if self.kind == "reject_json_schema":
            response_format = info.body.get("response_format")
            if not (isinstance(response_format, dict) and response_format.get("type") == "json_schema"):
                return False
        return (
            (self.role is None or self.role == info.role)
            and (self.call is None or self.call == info.call)
            and (self.round is None or self.round == info.round)
        )
