"""How a run ended: the reason as a closed set of values, and what a method hands back to the engine.

``Method.run`` returns a ``RunOutcome``; the engine turns it into the ``RunFinished`` event, whose
``reason`` is recorded as the enum's string value, so sessions recorded before this type existed load
unchanged (``event_from_dict`` turns the text back into the member). Code compares with the members
(``finished.reason == EndReason.ERROR``), never with their text.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class EndReason(StrEnum):
    """Why a run ended. The first five are the engine's or any round-based method's; the rest name the
    method-specific stop a method reports (its paper's own stopping rule)."""

    MANAGER = "manager"  # DyTopo: the Manager set terminate
    MAX_ROUNDS = "max_rounds"  # the round (or step) limit was reached
    CONVERGED = "converged"  # DyTopo: consecutive rounds' outputs stopped changing
    CANCELLED = "cancelled"  # the user cancelled the run
    ERROR = "error"  # the run could not go on (an unreachable server, a failed embedding)
    BUDGET = "budget"  # the time or call budget was reached (settings time_budget, max_calls)
    FAILED = "failed"  # the single-agent baseline got no answer at all
    SINGLE = "single"  # the single-agent baselines end after their one (or k) calls
    SUMMARIZER = "summarizer"  # DMoA: the Summarizer gave [FINAL]
    ONE_SHOT = "one-shot"  # TopoDIM: the decision-maker read the one-shot graph's answers
    PASSED = "passed"  # TopoWeaver: the check passed
    MAX_TURNS = "max_turns"  # TopoWeaver: the turn limit was reached with no pass


@dataclass(frozen=True)
class RunOutcome:
    """What a method's run returns: why it ended, a one-line detail, the answer and whose it is.

    source: "manager", "extracted:<Agent>" or "" (no answer)."""

    reason: EndReason
    detail: str
    answer: str
    source: str
