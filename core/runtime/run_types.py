"""The values a run is made of, shared by the engine and the methods: what to run (RunSpec), where a fork
starts (ForkPoint), one call's result (AgentResult), a round's check (Evaluation) and why a run cannot go
on (RunAborted). A leaf of the runtime: the engine and the run context (core.runtime.run_context) both
read it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.runtime import events as ev
from core.runtime.config import DomainName, RoundProtocol
from core.runtime.rosters import Team


@dataclass
class RunSpec:
    """What to run: the problem and the choices that do not change during a run."""

    problem: str
    domain: DomainName = DomainName.CODE
    protocol: RoundProtocol = RoundProtocol.PHASED
    model: str = ""
    base_url: str = ""
    demo: bool = False
    # In a demo, the scripted server's own problem it plays instead of ``problem`` (its name); "" when it
    # plays this one, or when no demo runs. Its answer and verdict are then about that problem, not this.
    demo_played: str = ""
    parent: dict[str, Any] | None = None
    # The team (a user team from core.runtime.teams, or a built-in Team); None: the domain's built-in one.
    team: Team | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


@dataclass(frozen=True)
class ForkPoint:
    parent: dict[str, Any]  # {"session": str, "round": int}
    round: int  # the last recorded round kept; the fork runs round + 1 next
    history: list[ev.Event]  # the parent's events of rounds 1..round
    goal: str  # the goal for round + 1


@dataclass
class AgentResult:
    agent: str
    status: ev.CallStatus
    public: str = ""
    private: dict[str, str] = field(default_factory=dict)
    query: str = ""
    key: str = ""
    answer: str = ""
    raw: str = ""
    error: str = ""
    connection_failed: bool = False
    top_logprobs: list[list[float]] | None = None  # per token, when the call asked for them (agent_call)
    context_overflow: bool = False  # the prompt did not fit the model's context, even trimmed: no reply


@dataclass
class Evaluation:
    """What a round evaluator (e.g. running the code's tests) found."""

    passed: bool
    feedback: str  # for the next prompts (DyTopo: the Manager's, and the workers' memory)
    events: list[ev.Event] = field(default_factory=list)


@dataclass(frozen=True)
class CheckedRound:
    """A recorded round's outputs as its check took them in live (what the method gave ``evaluate``): a fork's
    replay hands them back (RunContext.record), so its check starts with the code and tests the parent had."""

    outputs: dict[str, AgentResult]


class RoundEvaluator(Protocol):
    async def evaluate(self, round_no: int, problem: str, outputs: dict[str, AgentResult]) -> Evaluation | None: ...

    def collect(self, outputs: dict[str, AgentResult]) -> None:
        """Take in a recorded round's outputs as ``evaluate`` did live, running nothing (a fork's replay)."""



class RunAborted(Exception):
    """The run cannot go on (e.g. the endpoint is unreachable); the message is for the user."""
