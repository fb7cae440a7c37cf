"""What every face says when a demo plays its own problem instead of the one it was asked.

The scripted server plays fixed scenarios (core.runtime.demo_scenarios); asked for another problem, it still
answers the scenario's, and a code run's tests check the scenario's code. RunStarted.demo_played and
RunFinished.demo_played name that scenario; these phrases, shared by the headless output, the TUI and
the compare view, keep its answer and verdicts from reading as the solution of the user's problem.
Kept free of imports, so any face can use them cheaply.
"""

from __future__ import annotations


def demo_banner(played: str) -> str:
    """The run's opening warning (headless progress, the TUI's result pane)."""
    return (
        f"DEMO — the scripted server plays its own problem ({played}), not yours: "
        "its answer and verdict are not about your problem"
    )


def demo_answer_note(played: str) -> str:
    """Said with the final answer."""
    return f"DEMO — this answer is to the demo's own problem ({played}), not to yours"


def demo_header(played: str) -> str:
    """Before the problem line of the TUI's header (short: the user's problem follows it)."""
    return f"DEMO plays {played} instead of:"


TESTS_LABEL = "tests of the demo's own problem"  # what a test verdict is about, in place of "tests"


def demo_expect_note(expected: str, played: str) -> str:
    """``--expect``'s verdict when the demo played another problem: nothing was checked."""
    return (
        f"expected answer {expected!r}: not applicable — the demo played its own problem ({played}), "
        "not yours; nothing was checked"
    )
