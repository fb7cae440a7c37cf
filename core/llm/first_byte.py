"""The wait for a response to start (its headers, connect included), bounded by ``first_byte_timeout``:
a server that does not answer in time ends the call with one line (``EndpointUnavailable``), not retried.
The wait can be cancelled (it is an await), and can report "contacting URL … N s" while it lasts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import openai

from core.llm.errors import EndpointUnavailable, seconds

T = TypeVar("T")

STATUS_EVERY = 5.0  # "contacting URL … N s" after 1 s, then every 5 s, while the endpoint has not answered


@dataclass(frozen=True)
class FirstByte:
    """``limit``: first_byte_timeout in seconds; ``url`` is shown in messages, ``endpoint`` names the request
    of an EndpointUnavailable (without user:password@)."""

    limit: float
    url: str
    endpoint: str

    def no_answer(self, waited: float) -> EndpointUnavailable:
        return EndpointUnavailable(
            f"no answer from {self.url} in {seconds(waited)} s: the server is not responding "
            "(first_byte_timeout in the config file sets how long to wait)",
            self.endpoint,
        )

    async def answer(self, awaitable: Awaitable[T], on_status: Callable[[str], None] | None = None) -> T:
        """``awaitable`` (a request up to its response headers), or EndpointUnavailable after the limit.
        ``on_status``, when given, hears "contacting URL … N s" every few seconds."""
        task = asyncio.ensure_future(awaitable)
        start = time.monotonic()
        next_status = 1.0  # then every STATUS_EVERY seconds
        try:
            while True:
                elapsed = time.monotonic() - start
                if elapsed >= self.limit:
                    raise self.no_answer(self.limit)
                wake = min(self.limit, next_status) if on_status else self.limit
                done, _ = await asyncio.wait({task}, timeout=max(0.0, wake - elapsed))
                if done:
                    try:
                        return task.result()
                    except openai.APITimeoutError:  # the SDK's own connect or read timeout came first
                        raise self.no_answer(time.monotonic() - start) from None
                elapsed = time.monotonic() - start
                if on_status and next_status - 0.01 <= elapsed < self.limit:
                    on_status(f"contacting {self.url} … {next_status:.0f} s")
                    next_status = (next_status // STATUS_EVERY + 1) * STATUS_EVERY
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task})  # let it close its connection; a new cancel still reaches us
