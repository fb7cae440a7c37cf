"""Reading one streamed reply, bounded: content deltas go to the caller as they come; a stream that goes on
past max_tokens, or slower than min_tokens_per_second, is cut off as if at max_tokens (core.llm.bounds); a
stream that stalls (longer than call_timeout of silence) or drops mid-way is a ``StreamBroken`` (the client
retries it once). Usage, timings and cached tokens are folded into the ``StreamState`` (core.llm.stream)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai

from core.llm.bounds import ReplyBound
from core.llm.httpx_lib import httpx
from core.llm.stream import DONE, StreamState, read_chunk, sse_data

DeltaCallback = Callable[[str], None]


class StreamBroken(Exception):
    """A stream that had started stalled or dropped: retried once."""

    def __init__(self, error: openai.APIConnectionError) -> None:
        super().__init__(str(error))
        self.error = error


async def read_reply(lines: AsyncIterator[str], http_request: Any, bound: ReplyBound, state: StreamState,
                     on_delta: DeltaCallback | None, url: str) -> None:
    """Fold the response body's SSE ``lines`` into ``state`` until [DONE], the body's end or ``bound``;
    raises StreamBroken for a stall or a dropped connection, StreamError for a stream that breaks its
    contract (``url`` named in its message)."""
    deadline = asyncio.timeout(bound.seconds)
    try:
        async with deadline:
            await _read_events(lines, http_request, bound, state, on_delta, url)
    except TimeoutError:
        if not deadline.expired():
            raise
        state.cut_short, state.finish = bound.too_slow(state.chunks, state.total), "length"
    except httpx.TimeoutException as exc:  # silence longer than call_timeout inside the stream
        raise StreamBroken(openai.APITimeoutError(request=exc._request or http_request)) from exc
    except httpx.HTTPError as exc:  # a connection dropped mid-stream
        raise StreamBroken(
            openai.APIConnectionError(message=str(exc) or type(exc).__name__, request=exc._request or http_request)
        ) from exc


async def _read_events(lines: AsyncIterator[str], http_request: Any, bound: ReplyBound, state: StreamState,
                       on_delta: DeltaCallback | None, url: str) -> None:
    done = False
    async for data in sse_data(lines):
        # After [DONE] the body is read to its end (nothing should follow), so that the
        # connection goes back to the pool instead of being closed.
        done = done or data.startswith(DONE)
        if done:
            continue
        for piece in read_chunk(data, state, http_request, url):
            if on_delta:
                on_delta(piece)
        state.cut_short = bound.overrun(state.chunks, state.total)
        if state.cut_short:  # a server that ignores max_tokens: stop reading, close the stream
            state.finish = "length"
            break
