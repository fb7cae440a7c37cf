"""The ``--demo`` scenarios: a scripted team per domain, and the replies to the round calls every team
method shares (the Manager's plan and decision, descriptors, work: core.runtime.prompts' contracts).

Below the methods so that a method's own demo script (its package's ``demo`` module, or a plugin's) can
build on the same problems and texts; core.demo.scripts asks the method's script first and falls back
to ``round_reply`` here.

Code follows the DyTopo paper's case study (HumanEval make_palindrome): round 1 everyone drafts in
parallel (the Developer's draft has an off-by-one), round 2 the Tester's query meets the Developer's
key (the paper's 0.77 pair) and the Tester reports the failing cases, round 3 the Developer fixes it,
the Tester confirms and the Manager ends the run with the code. Math ends in round 2 with a verified
answer, general in round 2 with a synthesis. Descriptors are written so real MiniLM routing at
tau 0.3 builds a sparse, sensible graph. Rounds past the script repeat its last round.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from core.runtime.events import CallKind
from core.runtime.scripted import RequestInfo

DEMO_MODEL = "scripted-demo"

DEMO_PROBLEMS: dict[str, str] = {
    "code": (
        "Complete these two functions (HumanEval/10).\n\n"
        "def is_palindrome(string: str) -> bool:\n"
        '    """ Test if given string is a palindrome """\n\n'
        "def make_palindrome(string: str) -> str:\n"
        '    """ Find the shortest palindrome that begins with a supplied string.\n'
        "    Algorithm idea is simple:\n"
        "    - Find the longest postfix of supplied string that is a palindrome.\n"
        "    - Append to the end of the string reverse of a string prefix that comes before the "
        "palindromic suffix.\n"
        "    >>> make_palindrome('')\n    ''\n"
        "    >>> make_palindrome('cat')\n    'catac'\n"
        "    >>> make_palindrome('cata')\n    'catac'\n"
        '    """'
    ),
    "math": (
        "If $f(x) = \\frac{3x-2}{x-2}$, what is the value of $f(-2) +f(-1)+f(0)$? "
        "Express your answer as a common fraction."
    ),
    "general": (
        "Our team of five maintains three small web services in three repositories. "
        "Should we move them into a single monorepo?"
    ),
}

# What each scenario is, in a few words: named when a run asks the demo for another problem (the demo
# plays its own scenario whatever it is asked, so its answer and verdict are about this one).
DEMO_NAMES: dict[str, str] = {
    "code": "HumanEval/10 make_palindrome",
    "math": "MATH f(-2)+f(-1)+f(0) with f(x) = (3x-2)/(x-2)",
    "general": "a monorepo for a team of five with three services",
}


def _plain(text: str) -> str:
    return " ".join(text.split())


def demo_played(problem: str, domain: str) -> str:
    """The scenario the demo plays instead of ``problem`` (its name, DEMO_NAMES), or "" when ``problem`` is
    the demo's own problem for ``domain`` (whitespace aside: a file or a form may add a newline)."""
    known = domain if domain in DEMO_PROBLEMS else "code"  # the scripts play code for a domain they lack
    if _plain(problem) == _plain(DEMO_PROBLEMS[known]):
        return ""
    return DEMO_NAMES[known]


# The correct solution the demo converges to (checked by tests against HumanEval's cases).
FINAL_CODE = '''def is_palindrome(string: str) -> bool:
    """ Test if given string is a palindrome """
    return string == string[::-1]


def make_palindrome(string: str) -> str:
    """ Find the shortest palindrome that begins with a supplied string. """
    for i in range(len(string)):
        if is_palindrome(string[i:]):
            return string + string[:i][::-1]
    return string
'''

DRAFT_CODE = """def is_palindrome(string: str) -> bool:
    return string == string[::-1]


def make_palindrome(string: str) -> str:
    for i in range(1, len(string)):
        if is_palindrome(string[i:]):
            return string + string[:i][::-1]
    return string + string[::-1]
"""


def _py(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


@dataclass(frozen=True)
class Work:
    public: str
    private: dict[str, str] | None = None
    answer: str | None = None


@dataclass(frozen=True)
class Scenario:
    plan_goal: str
    # role -> round -> work
    work: dict[str, dict[int, Work]]
    # role -> round -> (query, key): the descriptors emitted for that round's routing (rounds >= 2)
    descriptors: dict[str, dict[int, tuple[str, str]]]
    # round -> next goal, for the rounds the Manager continues
    goals: dict[int, str]
    terminate_round: int
    final_answer: str
    final_reasoning: str
    forced_reasoning: str  # when the last configured round arrives before terminate_round


def _at(table: dict[int, Any], round_no: int) -> Any:
    """table[round], or the last scripted round's entry for rounds past the script."""
    scripted = [r for r in table if r <= round_no]
    return table[max(scripted) if scripted else min(table)]


# --- code: HumanEval/10 -------------------------------------------------------------------------------

_CODE = Scenario(
    plan_goal="Round 1: agree on the signatures of is_palindrome and make_palindrome, choose the algorithm, "
    "draft an implementation and write the docstring test cases with edge cases.",
    work={
        "Designer": {
            1: Work(
                "Interface, following the docstring exactly:\n"
                + _py(
                    "def is_palindrome(string: str) -> bool: ...\n"
                    "def make_palindrome(string: str) -> str: ..."
                )
                + "\nBoth are pure functions on str; make_palindrome returns a new string that starts with "
                "the input. No classes needed.",
            ),
            2: Work(
                "The Developer's code matches both signatures and type hints. The docstring of "
                "make_palindrome should keep the doctest examples ('' -> '', 'cat' -> 'catac', "
                "'cata' -> 'catac') so the task's own checks still apply.",
            ),
            3: Work("Interface confirmed on the fixed version: signatures unchanged, docstrings kept."),
        },
        "Researcher": {
            1: Work(
                "Algorithm: find the longest palindromic suffix, then append the reverse of the prefix "
                "before it. A plain scan over suffix start positions i = 0..n-1 with a reversed-string "
                "check is O(n^2) time, O(n) space, fine for docstring-sized inputs. KMP on "
                "reverse(s) + '#' + s gives O(n) but is overkill here.",
                {
                    "Developer": "Start the scan at i = 0 so a string that is already a palindrome "
                    "is returned as is."
                },
            ),
            2: Work(
                "Complexity check of the draft: the suffix scan is O(n^2) worst case ('abcd...'), O(n) "
                "extra space for slices. Acceptable. Note the loop starts at i = 1, so the full string is "
                "never tested as its own palindromic suffix.",
            ),
            3: Work("The fix keeps the O(n^2) scan and now covers i = 0; no further concerns."),
        },
        "Developer": {
            1: Work(
                "Draft implementation of the suffix scan:\n" + _py(DRAFT_CODE),
            ),
            2: Work(
                "Implementation ready for verification, unchanged from round 1 apart from formatting:\n"
                + _py(DRAFT_CODE),
            ),
            3: Work(
                "Fixed the off-by-one the Tester found: the scan now starts at i = 0, so 'x' and 'xyx' "
                "are returned unchanged.\n" + _py(FINAL_CODE),
            ),
        },
        "Tester": {
            1: Work(
                "Test cases (input -> expected), edge cases first:\n"
                + _py(
                    "assert make_palindrome('') == ''\n"
                    "assert make_palindrome('x') == 'x'\n"
                    "assert make_palindrome('xyx') == 'xyx'\n"
                    "assert make_palindrome('cat') == 'catac'\n"
                    "assert make_palindrome('cata') == 'catac'\n"
                    "assert make_palindrome('jerry') == 'jerryrrej'"
                ),
            ),
            2: Work(
                "Ran the 6 cases on the Developer's make_palindrome: 4 pass, 2 fail.\n"
                "FAIL make_palindrome('x') -> 'xx', expected 'x'\n"
                "FAIL make_palindrome('xyx') -> 'xyxyx', expected 'xyx'\n"
                "Cause: range(1, len(string)) skips i = 0, so an input that is already a palindrome "
                "is never recognised.",
                {"Developer": "Use range(len(string)) and return string when nothing earlier matches."},
            ),
            3: Work(
                "Re-ran all 6 cases on the fixed make_palindrome: 6/6 pass, including '' and the "
                "single-character and already-palindromic inputs.",
            ),
        },
    },
    descriptors={
        "Designer": {
            2: (
                "I need the agreed algorithm to shape the docstrings.",
                "I provide the API design: function signatures and type hints for both functions.",
            ),
            3: (
                "I need the Developer's final Python implementation to check the function signatures.",
                "I provide the API design: function signatures and type hints for both functions.",
            ),
        },
        "Researcher": {
            2: (
                "I need the Developer's make_palindrome implementation to analyse its time complexity.",
                "I provide the algorithm choice and its quadratic time complexity.",
            ),
            3: (
                "I need the Developer's fixed make_palindrome code to confirm the complexity is unchanged.",
                "I provide the complexity analysis: O(n^2) time, O(n) space.",
            ),
        },
        "Developer": {
            2: (
                "I need the Tester's report on failing edge cases before the next fix.",
                "I provide the complete Python implementation of make_palindrome and is_palindrome.",
            ),
            3: (
                "I need the Tester's failing cases 'x' and 'xyx' to fix the loop bounds.",
                "I provide the fixed Python implementation of make_palindrome and is_palindrome.",
            ),
        },
        "Tester": {
            2: (
                "I need the Developer's implementation of make_palindrome "
                "to verify against these test cases.",
                "I provide test cases with expected results and a report of failures.",
            ),
            3: (
                "I need the Developer's fixed make_palindrome to re-run the failing test cases.",
                "I provide the verification report: which test cases pass and fail.",
            ),
        },
    },
    goals={
        1: "Round 2: run the Tester's cases against the Developer's draft, report every failure with its "
        "cause, and confirm the algorithm's complexity.",
        2: "Round 3: fix the off-by-one the Tester reported (inputs 'x' and 'xyx') "
        "and re-run all test cases.",
    },
    terminate_round=3,
    final_answer=FINAL_CODE,
    final_reasoning="The fixed make_palindrome passes all 6 test cases (edge cases '', 'x', 'xyx' included), "
    "matches the agreed signatures and runs in O(n^2). The task is complete.",
    forced_reasoning="This is the last round. Returning the best implementation so far, with the suffix scan "
    "starting at i = 0 so already-palindromic inputs are handled.",
)

# --- math: MATH-500 style -------------------------------------------------------------------------------

_MATH_ANSWER = "\\frac{14}{3}"

_MATH = Scenario(
    plan_goal="Round 1: list the three evaluations needed, compute f(-2), f(-1) and f(0), add them as "
    "fractions, and check each value independently.",
    work={
        "ProblemParser": {
            1: Work(
                "Given f(x) = (3x-2)/(x-2), defined for x != 2; none of -2, -1, 0 is excluded. "
                "Target: f(-2) + f(-1) + f(0) as a common fraction.\n"
                "Plan: 1) evaluate f(-2); 2) evaluate f(-1); 3) evaluate f(0); "
                "4) add with a common denominator of 3 and reduce.",
            ),
            2: Work("The plan was followed step by step; nothing in the statement is left unused."),
        },
        "Solver": {
            1: Work(
                "f(-2) = (3(-2)-2)/(-2-2) = (-8)/(-4) = 2.\n"
                "f(-1) = (3(-1)-2)/(-1-2) = (-5)/(-3) = 5/3.\n"
                "f(0) = (0-2)/(0-2) = 1.\n"
                "Sum: 2 + 5/3 + 1 = 6/3 + 5/3 + 3/3 = 14/3.",
                answer=_MATH_ANSWER,
            ),
            2: Work(
                "Confirmed after the Verifier's check: f(-2) + f(-1) + f(0) = 2 + 5/3 + 1 = 14/3, already "
                "in lowest terms.",
                answer=_MATH_ANSWER,
            ),
        },
        "Verifier": {
            1: Work(
                "Independent check of each value: at x = -2 numerator -8, denominator -4, so 2; at x = -1 "
                "numerator -5, denominator -3, so 5/3; at x = 0 numerator -2, denominator -2, so 1. "
                "No division by zero occurs.",
            ),
            2: Work(
                "Verified the Solver's derivation line by line: all three evaluations and the sum "
                "6/3 + 5/3 + 3/3 = 14/3 are correct; 14 and 3 are coprime. VERDICT: the answer 14/3 holds.",
            ),
        },
    },
    descriptors={
        "ProblemParser": {
            2: (
                "I need objections to my solving plan, if any.",
                "I provide the problem analysis: conditions, domain of f and the solving plan.",
            ),
        },
        "Solver": {
            2: (
                "I need the verifier's corrections to my derivation of f(-2) + f(-1) + f(0).",
                "I provide a step-by-step solution for f(-2) + f(-1) + f(0) and the final answer 14/3.",
            ),
        },
        "Verifier": {
            2: (
                "I need the Solver's detailed solution for f(-2) + f(-1) + f(0) to verify each step.",
                "I provide a verification of each evaluation with any arithmetic errors found.",
            ),
        },
    },
    goals={
        1: "Round 2: verify the Solver's derivation step by step and confirm the sum as a reduced fraction."
    },
    terminate_round=2,
    final_answer=_MATH_ANSWER,
    final_reasoning="The Solver's derivation gives 14/3 and the Verifier checked every step. "
    "The task is complete.",
    forced_reasoning="This is the last round. The Solver's answer 14/3 agrees with the Verifier's "
    "independent "
    "evaluation of each term.",
)

# --- general: an open question -------------------------------------------------------------------------

_GENERAL_ANSWER = (
    "Yes, move to a monorepo, but incrementally. For five people and three small services it removes "
    "cross-repo version bumps and lets one change touch an API and its callers atomically. Guard against "
    "the risks raised: keep per-service CI that runs only on changed paths, keep separate deploys, and "
    "migrate one service at a time with its git history (e.g. git subtree), reviewing after the first one."
)

_GENERAL = Scenario(
    plan_goal="Round 1: lay out the options and trade-offs of a monorepo versus separate repositories, "
    "and raise the risks and counter-arguments.",
    work={
        "Analyst": {
            1: Work(
                "Facts: 5 developers, 3 small services, 3 repos. For a monorepo: atomic changes across "
                "services, one CI config, shared tooling, no version bumps between internal packages. "
                "Against: CI must learn to build only what changed; access control is coarser; the "
                "migration costs a few days.",
            ),
            2: Work("The Critic's points are addressable with path-filtered CI and separate deploys."),
        },
        "Critic": {
            1: Work(
                "Weak points: it assumes the services change together; if they rarely do, the gain is "
                "small. Risks: CI times grow if every push builds everything; deploy coupling creeps in; "
                "git history is lost if the migration just copies files.",
                {"Synthesizer": "Weigh how often a change spans more than one service."},
            ),
            2: Work("No new objections if CI is path-filtered and deploys stay independent."),
        },
        "Synthesizer": {
            1: Work("Waiting for the analysis and the critiques before recommending."),
            2: Work(
                "Synthesis: the Analyst's benefits are real for a team this size, and each of the Critic's "
                "risks has a cheap guard. Recommendation: " + _GENERAL_ANSWER,
            ),
        },
    },
    descriptors={
        "Analyst": {
            2: (
                "I need objections to the facts I gathered.",
                "I provide a trade-off analysis of one repository versus three.",
            ),
        },
        "Critic": {
            2: (
                "I need a draft conclusion to find weak points in.",
                "I provide critiques: the risks and counter-arguments.",
            ),
        },
        "Synthesizer": {
            2: (
                "I need the trade-off analysis and the critiques to combine into one recommendation.",
                "I provide the final recommendation with its guards.",
            ),
        },
    },
    goals={
        1: "Round 2: combine the analysis and the critiques into one recommendation that answers each risk."
    },
    terminate_round=2,
    final_answer=_GENERAL_ANSWER,
    final_reasoning="The synthesis answers every risk the Critic raised with a concrete guard. "
    "The task is complete.",
    forced_reasoning="This is the last round. The analysis and critiques support an incremental move.",
)

SCENARIOS: dict[str, Scenario] = {"code": _CODE, "math": _MATH, "general": _GENERAL}


# --- replies ----------------------------------------------------------------------------------------------


def _user_text(info: RequestInfo) -> str:
    return "\n".join(str(m.get("content", "")) for m in info.messages if m.get("role") == "user")


def _manager_reply(scn: Scenario, info: RequestInfo) -> dict[str, Any]:
    if info.call == CallKind.PLAN:
        return {
            "goal": scn.plan_goal,
            "terminate": False,
            "reasoning": "Start with every role contributing in parallel.",
            "final_answer": "",
        }
    last = "This was the last round" in _user_text(info)
    if info.round >= scn.terminate_round or last:
        reasoning = scn.final_reasoning if info.round >= scn.terminate_round else scn.forced_reasoning
        return {"goal": "", "terminate": True, "reasoning": reasoning, "final_answer": scn.final_answer}
    return {
        "goal": _at(scn.goals, info.round),
        "terminate": False,
        "reasoning": f"Round {info.round} made progress but the result is not yet verified.",
        "final_answer": "",
    }


def _descriptors(scn: Scenario, role: str, round_no: int) -> tuple[str, str]:
    table = scn.descriptors.get(role)
    if not table:  # an agent the script does not know: generic but valid descriptors
        return ("I need the team's current results.", f"I provide the {role}'s contribution.")
    need, offer = _at(table, max(2, round_no))
    return str(need), str(offer)


def _worker_reply(scn: Scenario, info: RequestInfo) -> dict[str, Any]:
    if info.call == CallKind.DESCRIPTORS:
        query, key = _descriptors(scn, info.role, info.round)
        return {"query": query, "key": key}
    roles = scn.work.get(info.role)
    work = _at(roles, info.round) if roles else Work(f"{info.role} has nothing to add this round.")
    # The descriptors a work reply carries are the ones for the next routing (single-pass protocol).
    query, key = _descriptors(scn, info.role, info.round + 1)
    reply: dict[str, Any] = {
        "public": work.public,
        "private": dict(work.private or {}),
        "query": query,
        "key": key,
    }
    if work.answer is not None:
        reply["answer"] = work.answer
    return reply


def round_reply(info: RequestInfo) -> str:
    """The scripted reply to a round call every team method shares (the Manager's plan and decision, a
    worker's descriptors or work): a JSON string in core.runtime.prompts' contracts."""
    scn = SCENARIOS.get(info.domain, _CODE)
    if info.role == "Manager" or info.call in (CallKind.PLAN, CallKind.MANAGER):
        reply = _manager_reply(scn, info)
    else:
        reply = _worker_reply(scn, info)
    return json.dumps(reply)
