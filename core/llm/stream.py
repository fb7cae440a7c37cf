"""Reading a streamed chat completion from its raw server-sent events.

The openai SDK turns every chunk into pydantic models; with 16 agents streaming 100 chunks a second
that construction alone was over half of the app's CPU (bench/tui_stream.py --agents 16). The client
still sends the request, with the SDK's auth, timeouts and status errors
(``with_streaming_response``); this module reads the body: SSE framing, then plain ``json.loads`` of
each chunk. Anything malformed is a clear ``StreamError`` (an ``openai.APIError``), never a raw parser error.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import openai

DONE = "[DONE]"


class StreamError(openai.APIError):
    """The server broke the stream's contract or reported an error inside it; the message is one line."""


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The data of each server-sent event (WHATWG SSE framing): ``data:`` lines, joined by newlines,
    make one event at the next blank line; comments (``:``) and other fields are skipped."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:  # a body that ends without the final blank line
        yield "\n".join(data)


@dataclass
class StreamState:
    """What a stream has said so far. Past ``max_chars`` the text is no longer kept (nor passed on as deltas):
    only counted, so an oversized reply costs a bounded record (``text()`` marks the cut and the full size)."""

    parts: list[str] = field(default_factory=list)
    max_chars: int = 1_000_000
    kept: int = 0
    total: int = 0
    usage: tuple[int, int] | None = None
    # Prompt tokens the server took from its prefix cache, where it says (None: it did not): OpenAI and vLLM's
    # usage.prompt_tokens_details.cached_tokens, llama.cpp's timings.cache_n.
    cached: int | None = None
    finish: str | None = None
    logprobs: list[list[float]] | None = None  # collected only when asked for
    sent: bool = False  # the request went out (LLMClient: a call cut off after this still cost its prompt)
    chunks: int = 0  # events that carried content
    cut_short: str = ""  # why the client stopped reading before the server ended (core.llm.bounds)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def cached_tokens(chunk: dict[str, Any]) -> int | None:
    """The prompt tokens a reply says came from the server's cache, or None when it does not say.
    llama.cpp's timings (cache_n: reused, prompt_n: prefilled now) win over its usage details when both come."""
    timings = chunk.get("timings")
    if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
        return _count(timings["cache_n"])
    usage = chunk.get("usage")
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
        return _count(details["cached_tokens"])
    return None


def read_chunk(data: str, state: StreamState, request: Any, url: str) -> list[str]:
    """Fold one event's data into ``state``; returns the new content pieces. Raises StreamError for
    an error the server sends mid-stream, or data that is not a JSON object."""
    try:
        chunk = json.loads(data)
    except ValueError:
        raise StreamError(
            f"the endpoint {url} sent a stream chunk that is not JSON: {data[:60]!r}", request, body=None
        ) from None
    if not isinstance(chunk, dict):
        raise StreamError(f"the endpoint {url} sent a stream chunk that is not a JSON object", request, body=None)
    error = chunk.get("error")
    if error:  # as the SDK does: an error object inside the stream ends the call
        message = error.get("message") if isinstance(error, dict) else None
        text = message if isinstance(message, str) and message else "an error occurred during streaming"
        raise StreamError(f"the endpoint {url} failed mid-stream: {text}", request, body=error)
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        state.usage = (_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))
    cached = cached_tokens(chunk)
    if cached is not None:
        state.cached = cached
    pieces: list[str] = []
    for choice in chunk.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        if isinstance(choice.get("finish_reason"), str) and choice["finish_reason"]:
            state.finish = choice["finish_reason"]
        delta = choice.get("delta")
        piece = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(piece, str) and piece:
            pieces.append(piece)
        if state.logprobs is not None and isinstance(choice.get("logprobs"), dict):
            state.logprobs.extend(token_top_logprobs(choice["logprobs"]))
    if pieces:
        state.chunks += 1
    kept: list[str] = []
    for piece in pieces:
        state.total += len(piece)
        room = state.max_chars - state.kept
        if room > 0:
            kept.append(piece[:room])
            state.kept += len(kept[-1])
    state.parts.extend(kept)
    return kept


def reply_text(state: StreamState) -> str:
    """The reply as kept: whole, or its first max_chars with a marker naming the full size."""
    text = "".join(state.parts)
    if state.total > state.kept:
        text += f"\n[... reply cut by swarm-tui at {state.kept:,} of its {state.total:,} characters]"
    return text


def token_top_logprobs(choice_logprobs: dict[str, Any]) -> list[list[float]]:
    """Per token of a streamed chunk's ``logprobs.content``, the returned top logprobs (the chosen token's
    own logprob when the endpoint sent no alternatives). Anything malformed is skipped, never raised."""

    def number(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool)

    out: list[list[float]] = []
    tokens = choice_logprobs.get("content")
    for token in tokens if isinstance(tokens, list) else ():
        if not isinstance(token, dict):
            continue
        tops = token.get("top_logprobs")
        listed = tops if isinstance(tops, list) else []
        values = [float(t["logprob"]) for t in listed if isinstance(t, dict) and number(t.get("logprob"))]
        if not values and number(token.get("logprob")):
            values = [float(token["logprob"])]
        if values:
            out.append(values)
    return out
