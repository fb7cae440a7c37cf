"""When failed model calls end a run: only when the endpoint is down, or after many failures in a row.

One call that fails after its retries (a connection reset, a 500, a stall) fails that agent's turn: the
turn is marked failed, a notice says so, and the run goes on. A phase that happened to hold that one call
is no reason to stop: the next call would most likely succeed. The run ends when

* the endpoint is down (nothing listens, the key or the model is refused, it never answers or keeps
  asking to wait: ``core.llm.client.endpoint_down``) and no call of the phase got a reply, or an agent's own
  endpoint is down (its calls cannot succeed); or
* ``limit`` calls in a row, across phases and rounds, failed without any reply (``max_failed_calls_in_a_row``;
  by default twice the team's size, so that every agent failed about twice over).
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass
from typing import Protocol

from core.runtime.events import CallStatus


class _Result(Protocol):
    """What the fault rules read of a call's result (core.runtime.engine.AgentResult); read-only."""

    @property
    def agent(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str: ...
    @property
    def connection_failed(self) -> bool: ...
    @property
    def context_overflow(self) -> bool: ...


def default_limit(team_size: int) -> int:
    """Twice the team, and at least 4: a small team does not end its run on two unlucky calls."""
    return max(4, 2 * team_size)


@dataclass
class FailureStreak:
    """Model calls that failed in a row without a reply (of any agent, in completion order)."""

    limit: int
    count: int = 0
    ended: str = ""  # once the limit was reached: why the run ends (sticky: a later reply does not undo it)

    def replied(self) -> None:
        self.count = 0

    def failed(self, error: str) -> str:
        """Count one failed call; returns why the run must end now, or "" when it goes on."""
        self.count += 1
        if self.count >= self.limit and not self.ended:
            self.ended = (f"{self.count} model calls in a row failed (max_failed_calls_in_a_row is {self.limit}); "
                          f"the last: {error}")
        return self.ended

    def goes_on(self) -> str:
        """The note for a failed call that does not end the run."""
        return f"its turn is marked failed and the run goes on ({self.count} of {self.limit} failures in a row allowed)"


def why_the_run_ends(results: Iterable[_Result], streak: FailureStreak, own_endpoints: Container[str]) -> str:
    """Why a phase's results end the run ("" when they do not): see the module's docstring."""
    results = list(results)
    if streak.ended:
        return streak.ended
    for result in results:  # an agent's own endpoint is gone: its calls cannot succeed
        if result.connection_failed and result.agent in own_endpoints:
            return result.error
    down = [r for r in results if r.connection_failed]
    # A prompt over the model's context, an unparsed reply: the server answered, it is not down.
    if down and all(r.status == CallStatus.FAILED and not r.context_overflow for r in results):
        return down[0].error
    return ""
