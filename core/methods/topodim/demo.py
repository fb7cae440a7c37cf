"""The scripted model's replies to TopoDIM's calls (``--demo --strategy topodim`` and ``bench --demo``).

The Manager's typed graph has the shape of the paper's case study (App. G, Figs. 10–13): four kept
workers (the fifth dropped by eq. 9), one conditioned, one debate and one feedback edge kept, one
edge masked by the acyclic rule and four pruned by eq. 8, so the run makes 9 calls:

    1/9 solution Developer            (the draft, with two bugs)
    2/9 solution Researcher           (conditioned on the Developer: spots one)
    3/9 challenge BugFixer            (debate Researcher -> BugFixer: finds the other)
    4/9 defend Researcher
    5/9 solution Tester
    6/9 evaluate Developer            (feedback Tester -> Developer)
    7/9 revise Tester
    8/9 solution BugFixer             (conditioned on the Researcher, with the debate)
    9/9 final Manager                 (the decision-maker)

Math and general follow the same shape with their teams. Any other call (random or policy graphs)
gets a sensible reply for its role and mode.
"""

from __future__ import annotations

import json

from core.methods.topodim.generators import CALL_GRAPH
from core.methods.topodim.method import CALLS
from core.methods.topodim.prompts import MARK
from core.runtime.config import DomainName
from core.runtime.demo_scenarios import FINAL_CODE
from core.runtime.scripted import BenchAnswer, MethodDemo, RequestInfo

# The calls TopoDIM makes (core.methods.topodim.method): answered by this script.
TOPODIM_CALLS = frozenset(CALLS)

# (src, dst, type, confidence): conditioned/debate/feedback kept, one masked, four pruned (alpha 0.7).
GRAPHS: dict[str, list[tuple[str, str, str, float]]] = {
    "code": [
        ("Developer", "Researcher", "conditioned", 0.92),
        ("Researcher", "BugFixer", "debate", 0.88),
        ("Tester", "Developer", "feedback", 0.81),
        ("BugFixer", "Researcher", "conditioned", 0.55),  # closes a cycle with the debate: masked (eq. 7)
        ("Designer", "Developer", "conditioned", 0.40),
        ("Tester", "BugFixer", "conditioned", 0.35),
        ("Researcher", "Tester", "feedback", 0.30),
        ("Designer", "Tester", "debate", 0.20),
    ],
    "math": [
        ("ProblemParser", "Solver", "conditioned", 0.90),
        ("Solver", "Verifier", "feedback", 0.85),
        ("Solver", "Mathematician", "debate", 0.75),
        ("Mathematician", "Solver", "conditioned", 0.50),  # masked
        ("Programmer", "Verifier", "conditioned", 0.40),
        ("ProblemParser", "Mathematician", "conditioned", 0.35),
        ("Verifier", "Programmer", "feedback", 0.30),
        ("Programmer", "Solver", "debate", 0.20),
    ],
    "general": [
        ("Analyst", "Synthesizer", "conditioned", 0.90),
        ("Analyst", "Critic", "debate", 0.80),
        ("Synthesizer", "Economist", "feedback", 0.70),
        ("Critic", "Analyst", "conditioned", 0.60),  # masked
        ("Expert", "Analyst", "conditioned", 0.40),
        ("Economist", "Synthesizer", "debate", 0.30),
        ("Critic", "Synthesizer", "conditioned", 0.25),
        ("Expert", "Critic", "feedback", 0.20),
    ],
}

_DRAFT = """def is_palindrome(string: str) -> bool:
    return string == string[::-1]


def make_palindrome(string: str) -> str:
    for i in range(1, len(string)):
        if is_palindrome(string[i:]):
            return string + string[:i]
    return string + string[::-1]
"""


def _py(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


_TESTS = (
    "assert make_palindrome('') == ''\n"
    "assert make_palindrome('x') == 'x'\n"
    "assert make_palindrome('cat') == 'catac'\n"
    "assert make_palindrome('cata') == 'catac'"
)

# The story: the draft has two bugs; the Researcher (conditioned on it) finds one, the BugFixer's challenge
# finds the other, the Tester's cases are reviewed by the Developer, and the BugFixer writes the fix.
_CODE: dict[tuple[str, str], str] = {
    ("Developer", "solution"): "Suffix scan: find the longest palindromic suffix, then append the prefix before "
    "it.\n" + _py(_DRAFT),
    ("Researcher", "solution"): "Building on the Developer's draft: the longest-palindromic-suffix scan is the "
    "standard algorithm, O(n^2) time and O(n) space here. But the draft appends string[:i] itself instead of its "
    "reverse, so make_palindrome('cat') gives 'catca' instead of 'catac'. Append string[:i][::-1].",
    ("BugFixer", "challenge"): "Challenge: reversing the prefix fixes 'cat', but is it the only bug? The loop "
    "starts at i = 1, so the whole string is never tried as its own palindromic suffix: make_palindrome('x') "
    "would give 'xx' and make_palindrome('xyx') 'xyxyx'. The scan must start at i = 0.",
    ("Researcher", "defend"): "The challenge is right: there are two bugs. With the reversed prefix and the scan "
    "starting at i = 0, every non-empty string returns inside the loop (a one-character suffix is always a "
    "palindrome) and '' falls through, so the fallback can simply return the input. Both fixes are needed.",
    ("Tester", "solution"): "Decisive cases, edge cases first:\n" + _py(_TESTS),
    ("Developer", "evaluate"): "Review of the Tester's cases: the expected values are right and the edge cases "
    "('' and a single character) are the important ones. Missing: an input that is already a palindrome longer "
    "than one character, e.g. 'xyx', and a longer one such as 'jerry' -> 'jerryrrej'.",
    ("Tester", "revise"): "Added the Developer's two cases:\n"
    + _py(_TESTS + "\nassert make_palindrome('xyx') == 'xyx'\nassert make_palindrome('jerry') == 'jerryrrej'"),
    ("BugFixer", "solution"): "Fixed version with both fixes from the Researcher and our debate: the prefix is "
    "reversed and the scan starts at i = 0.\n" + _py(FINAL_CODE),
    ("Manager", "final"): "The Developer's draft appends the prefix unreversed ('cat' -> 'catca') and skips "
    "i = 0 ('x' -> 'xx'); the debate between the Researcher and the BugFixer found both. The BugFixer's version "
    "fixes both and passes every case the Tester listed. Final answer:\n" + _py(FINAL_CODE),
}

_MATH_ANSWER = "\\frac{14}{3}"
_MATH: dict[tuple[str, str], str] = {
    ("ProblemParser", "solution"): "f(x) = (3x-2)/(x-2) is defined at -2, -1 and 0. Plan: evaluate each value, "
    "add them over the common denominator 3.",
    ("Solver", "solution"): "f(-2) = -8/-4 = 2, f(-1) = -5/-3 = 5/3, f(0) = -2/-2 = 1. "
    f"Sum: 2 + 5/3 + 1 = 14/3. \\boxed{{{_MATH_ANSWER}}}",
    ("Verifier", "evaluate"): "Each evaluation checks out (numerators -8, -5, -2; denominators -4, -3, -2) and "
    "the sum 6/3 + 5/3 + 3/3 = 14/3 is reduced. No error found.",
    ("Solver", "revise"): f"Confirmed by the Verifier: the sum is 14/3. \\boxed{{{_MATH_ANSWER}}}",
    ("Mathematician", "challenge"): "Challenge: is the sum perhaps meant as f(-2 - 1 + 0) = f(-3) = 11/5? "
    "The statement adds three function values, but check the reading.",
    ("Solver", "defend"): "The statement says f(-2) + f(-1) + f(0): three values added, not f of a sum. "
    f"The answer stays 14/3. \\boxed{{{_MATH_ANSWER}}}",
    ("Verifier", "solution"): f"Verified independently: 2 + 5/3 + 1 = 14/3. \\boxed{{{_MATH_ANSWER}}}",
    ("Mathematician", "solution"): "After the debate: the sum of the three values, via 3 - 4/(x-2) for each term: "
    f"(3+1) + (3-4/3) + (3-2) = 14/3. \\boxed{{{_MATH_ANSWER}}}",
    ("Manager", "final"): f"Three agents agree and the Verifier checked each step. \\boxed{{{_MATH_ANSWER}}}",
}

_GENERAL_ANSWER = (
    "Move to a monorepo, incrementally: one service first with its git history, CI that builds only what "
    "changed, separate deploys kept, and a review after the first service."
)
_GENERAL: dict[tuple[str, str], str] = {
    ("Analyst", "solution"): "For five people and three small services a monorepo removes cross-repo version "
    "bumps and allows atomic changes; the costs are CI that must build selectively and a short migration.",
    ("Critic", "challenge"): "Challenge: the gain assumes changes often span services. If they rarely do, the "
    "migration buys little, and CI times grow if every push builds everything.",
    ("Analyst", "defend"): "Fair: the case rests on cross-service changes. In a team of five working on three "
    "related services they are common; path-filtered CI answers the build-time risk.",
    ("Critic", "solution"): "After the debate: agreed, provided CI is path-filtered and deploys stay separate.",
    ("Synthesizer", "solution"): "Recommendation: " + _GENERAL_ANSWER,
    ("Economist", "evaluate"): "Review: the migration costs a few days once; the saving recurs with every "
    "cross-service change. The recommendation should say to measure that after the first service.",
    ("Synthesizer", "revise"): "Recommendation (with the Economist's point): " + _GENERAL_ANSWER,
    ("Economist", "solution"): "Cost view: a few days of migration against recurring savings; worth it.",
    ("Manager", "final"): _GENERAL_ANSWER,
}

_SCRIPTED = {"code": _CODE, "math": _MATH, "general": _GENERAL}

_GENERIC = {
    "solution": "{role}: my part of the solution, from my role's angle.",
    "evaluate": "{role} reviewed the answer: the approach is sound; state the edge cases it covers.",
    "revise": "{role}: revised answer, taking the review into account.",
    "challenge": "{role} challenges the answer: which assumption is weakest, and what breaks if it fails?",
    "defend": "{role}: the answer holds; the assumption is justified by the problem statement.",
}


def is_topodim_request(info: RequestInfo) -> bool:
    if info.call not in TOPODIM_CALLS:
        return False
    system = "\n".join(str(m.get("content", "")) for m in info.messages if m.get("role") == "system")
    return MARK in system


def _graph(domain: str) -> str:
    edges = GRAPHS.get(domain, GRAPHS["code"])
    return json.dumps({"edges": [{"src": s, "dst": d, "type": t, "confidence": c} for s, d, t, c in edges]})


def _final_default(domain: str) -> str:
    if domain == "code":
        return "Final answer:\n" + _py(FINAL_CODE)
    if domain == "math":
        return f"\\boxed{{{_MATH_ANSWER}}}"
    return _GENERAL_ANSWER


def topodim_reply(info: RequestInfo) -> str | None:
    """The demo's reply to a TopoDIM call, or None when the request is not TopoDIM's."""
    if not is_topodim_request(info):
        return None
    if info.call == CALL_GRAPH:
        return _graph(info.domain)
    scripted = _SCRIPTED.get(info.domain, _CODE).get((info.role, info.call))
    if scripted is not None:
        return scripted
    if info.call == "final":
        return _final_default(info.domain)
    answering = info.call in ("solution", "revise", "defend")
    if info.domain == DomainName.CODE and info.role in ("Developer", "BugFixer") and answering:
        return "Implementation:\n" + _py(FINAL_CODE)
    if info.domain == DomainName.MATH and info.role in ("Solver", "Mathematician") and info.call != "challenge":
        return f"The sum is 14/3. \\boxed{{{_MATH_ANSWER}}}"
    return _GENERIC.get(info.call, "{role} has nothing to add.").format(role=info.role)


def bench_reply(info: RequestInfo, bench: BenchAnswer) -> str | None:
    """``bench --demo``: TopoDIM's calls about a dataset problem. ``bench.answer`` is the solution the bench
    script stands behind (code for HumanEval, a value for MATH)."""
    if not is_topodim_request(info):
        return None
    answer, domain = bench.answer, bench.domain
    if info.call == CALL_GRAPH:
        return _graph(domain)
    final = _py(answer) if domain == "code" else f"The answer is $\\boxed{{{answer}}}$."
    if info.call == "final":
        return final
    solver = "Developer" if domain == "code" else "Solver"
    if info.role == solver and info.call in ("solution", "revise", "defend"):
        return final
    return _GENERIC.get(info.call, "{role} has nothing to add.").format(role=info.role)


DEMO = MethodDemo(topodim_reply, bench_reply)
