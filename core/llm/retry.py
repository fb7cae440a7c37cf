"""When a call that failed before it started is tried again, and after how long.

408/409/5xx and refused connections are retried up to ``max_retries`` times, honouring Retry-After. A 429 is
a server asking for patience, not a failure: it is retried as often as fits in ``max_retry_wait``, after the
wait it names (Retry-After) or, when it names none (a busy local server), with exponential backoff and
jitter. One call waits at most ``max_retry_wait`` seconds in all; a server that asks for more, or still
rate-limits when that time is spent, ends the call with one line (``EndpointUnavailable``).
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from dataclasses import dataclass

import openai

from core.llm.errors import EndpointUnavailable, seconds

MIN_NAMED_WAIT = 0.05  # seconds: the shortest Retry-After a 429 is waited, however often it repeats
INITIAL_BACKOFF = 0.5  # seconds before the first retry when the server names no Retry-After
MAX_BACKOFF = 8.0


def retry_after(exc: openai.APIStatusError) -> float | None:
    """Seconds the server asks us to wait (retry-after-ms, retry-after as seconds or an HTTP date)."""
    headers = exc.response.headers
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(delay):
            return max(0.0, delay)
        return math.inf
    value = headers.get("retry-after")
    if value:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())
    return None


def retryable(exc: openai.APIStatusError) -> bool:
    should = exc.response.headers.get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    return exc.status_code in (408, 409, 429) or exc.status_code >= 500


@dataclass
class RetryCount:
    """One call's tries so far: every attempt, the retries of calls that failed before they started (and
    the seconds waited for them), and the retries of streams that broke mid-way (one allowed)."""

    attempts: int = 0
    retries: int = 0
    stream_retries: int = 0
    waited: float = 0.0


@dataclass(frozen=True)
class RetryPolicy:
    """The client's bounds on retrying; ``url`` is shown in messages, ``endpoint`` names the request of an
    EndpointUnavailable (without user:password@)."""

    max_retries: int
    max_retry_wait: float
    url: str
    endpoint: str

    def wait(self, exc: openai.APIError, count: RetryCount) -> tuple[float, bool]:
        """Seconds to wait before retrying a call that failed before it started, and whether it is a backoff
        from a 429 that named no wait; raises when it may not be retried (not retryable, out of retries, or
        over max_retry_wait)."""
        if isinstance(exc, openai.APIStatusError) and not retryable(exc):
            raise exc
        limited = isinstance(exc, openai.RateLimitError)
        asked = _named_wait(exc, limited)
        # A 429 is tried again for as long as max_retry_wait allows, however many attempts that takes: after
        # the wait it names, or (a local server while it is busy) with exponential backoff and jitter.
        patient = limited and asked is None
        if count.retries >= self.max_retries and not limited:
            raise exc
        delay = asked if asked is not None else min(MAX_BACKOFF, INITIAL_BACKOFF * 2**count.retries)
        if asked is None:
            delay *= 1 - 0.25 * random.random()
        left = self.max_retry_wait - count.waited
        if patient and left >= INITIAL_BACKOFF / 4:
            delay = min(delay, left)  # the last wait fills what max_retry_wait leaves (a named wait is kept)
        if count.waited + delay > self.max_retry_wait:
            if limited:
                raise self._rate_limited(asked, patient, count) from exc
            raise exc
        return delay, patient

    def _rate_limited(self, asked: float | None, patient: bool, count: RetryCount) -> EndpointUnavailable:
        if asked is not None and asked > self.max_retry_wait:
            why = f"it asks to wait {seconds(asked)} s"
        elif patient:
            why = f"still refused after {count.retries + 1} attempts and {seconds(count.waited)} s of backing off"
        else:
            why = f"still refused after {seconds(count.waited)} s of waiting"
        return EndpointUnavailable(
            f"rate limited by {self.url}: {why}, more than max_retry_wait allows "
            f"({seconds(self.max_retry_wait)} s a call): try again later or raise max_retry_wait",
            self.endpoint,
        )

    def message(self, exc: openai.APIError, delay: float, backoff: bool, waited: float, described: str) -> str:
        """What the caller's ``on_retry`` hears before a retry of a call that failed before it started
        (``described``: the error as the client tells it)."""
        if backoff:
            return (f"rate limited by {self.url} (no Retry-After), retrying in {seconds(delay)} s "
                    f"({seconds(waited)} s of the {seconds(self.max_retry_wait)} s max_retry_wait)")
        if isinstance(exc, openai.RateLimitError):
            return f"rate limited by {self.url}, retrying in {seconds(delay)} s"
        return f"{described}; retrying in {seconds(delay)} s"


def _named_wait(exc: openai.APIError, limited: bool) -> float | None:
    """The wait the server named, if any; for a 429, "retry at once" again and again would spin: 0 is backed
    off like a 429 naming no wait, and a named wait is at least MIN_NAMED_WAIT (a few hundred attempts at
    most within max_retry_wait)."""
    asked = retry_after(exc) if isinstance(exc, openai.APIStatusError) else None
    if limited and asked is not None:
        return max(asked, MIN_NAMED_WAIT) if asked > 0 else None
    return asked
