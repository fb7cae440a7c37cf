"""What the scripted server plays for a debate (``--demo --strategy llm-debate``, and ``bench --demo``).

It builds on the app's own demo problems (core.runtime.demo_scenarios). Code: in round 1 Debater1 drafts
the suffix scan from i = 1 (the demo's buggy draft) while the others get it right; in round 2 Debater1
reads them and corrects its code, so the last round agrees. Math: Debater2 first slips on f(0) (13/3), then
takes the others' 14/3. General: each debater gives the scenario's recommendation. Replies depend only on
(debater, call, round, domain), read from the request.
"""

from __future__ import annotations

from core.runtime.demo_scenarios import DRAFT_CODE, FINAL_CODE, SCENARIOS
from core.runtime.scripted import BenchAnswer, MethodDemo, RequestInfo
from llm_debate.prompts import CALL_ANSWER, CALLS

_WRONG_MATH = "\\frac{13}{3}"


def _py(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def _code(role: str, first: bool) -> str:
    if role == "Debater1" and first:
        return "I scan the suffixes from the second character:\n" + _py(DRAFT_CODE)
    if role == "Debater1":
        return ("The others start the scan at i = 0, which handles 'x' and inputs that are already palindromes; "
                "my loop skipped that case. Corrected:\n" + _py(FINAL_CODE))
    return "Find the longest palindromic suffix, then mirror the prefix before it:\n" + _py(FINAL_CODE)


def _math(role: str, first: bool) -> str:
    answer = SCENARIOS["math"].final_answer
    if role == "Debater2" and first:
        return f"f(-2) = 2, f(-1) = 5/3, f(0) = 2/3 taken as 1/3 by mistake: the sum is $\\boxed{{{_WRONG_MATH}}}$."
    if role == "Debater2":
        return f"I misread f(0): it is (0-2)/(0-2) = 1. With 2 + 5/3 + 1 the sum is $\\boxed{{{answer}}}$."
    return f"f(-2) = 2, f(-1) = 5/3 and f(0) = 1, so the sum is $\\boxed{{{answer}}}$."


def debate_reply(info: RequestInfo) -> str | None:
    """The demo's reply to a debater's call; None for a call that is not the debate's."""
    if info.call not in CALLS:
        return None
    first = info.call == CALL_ANSWER
    if info.domain == "code":
        return _code(info.role, first)
    if info.domain == "math":
        return _math(info.role, first)
    return SCENARIOS["general"].final_answer


def bench_reply(info: RequestInfo, bench: BenchAnswer) -> str | None:
    """``bench --demo``: every debater gives the answer the bench script stands behind."""
    if info.call not in CALLS:
        return None
    if bench.domain == "code":
        return "Solution:\n" + _py(bench.answer)
    if bench.domain == "math":
        return f"The answer is $\\boxed{{{bench.answer}}}$."
    return bench.answer


DEMO = MethodDemo(debate_reply, bench_reply)
