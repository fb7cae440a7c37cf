"""What one chat call gave: the finished reply (``ChatResult``), or, for a call cancelled mid-way, what it
had cost so far (``cut_off_cost``). Token counts are estimated, and flagged, when the server reported none."""

from __future__ import annotations

from dataclasses import dataclass

from core.llm.stream import StreamState, reply_text
from core.llm.tokens import CutOffCost, estimate_usage


@dataclass
class ChatResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    usage_estimated: bool
    latency_s: float
    attempts: int
    finish_reason: str | None = None  # "stop", "length" (cut off at max_tokens), ... as the server said
    # Per generated token, the top logprobs the endpoint returned (asked for with top_logprobs=k);
    # None when not asked for or when the endpoint sent none.
    top_logprobs: list[list[float]] | None = None
    # Why the reply was cut off by the client (a stream past max_tokens, or slower than the floor rate;
    # core.llm.bounds): finish_reason is then "length". "" when the server ended it.
    cut_short: str = ""
    # Of prompt_tokens, how many the server took from its prefix cache; None when it does not say.
    cached_tokens: int | None = None


def chat_result(messages: list[dict[str, str]], state: StreamState, latency: float, attempts: int) -> ChatResult:
    """The finished call; its token counts estimated (and flagged) when the endpoint reported none."""
    text = reply_text(state)
    tops = state.logprobs or None
    if state.usage is not None:
        prompt, completion = state.usage
        return ChatResult(text, prompt, completion, False, latency, attempts, state.finish, tops, state.cut_short,
                          state.cached)
    return ChatResult(text, *estimate_usage(messages, text), True, latency, attempts, state.finish, tops,
                      state.cut_short, state.cached)


def cut_off_cost(cost: CutOffCost, messages: list[dict[str, str]], state: StreamState) -> None:
    """What a call cancelled mid-way had cost: the server's usage when it sent one, else an estimate from
    the prompt and the reply streamed so far (nothing when the request had not gone out)."""
    if not state.sent:
        return
    cost.sent = True
    if state.usage is not None:
        cost.prompt_tokens, cost.completion_tokens = state.usage
        return
    cost.prompt_tokens, cost.completion_tokens = estimate_usage(messages, reply_text(state))
    cost.estimated = True
