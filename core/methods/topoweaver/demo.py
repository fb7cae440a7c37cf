"""The ``--demo`` scenario for ``--strategy topoweaver``, and its replies in ``bench --demo``.

Code (the demo's HumanEval/10 make_palindrome): in turn 1 the Orchestrator rates the task interview
and plans five agents in three steps; the coder's draft scans suffixes from i = 1, the tester's cases
include make_palindrome('x') == 'x', and the sandbox answers WRONG_ANSWER. In turn 2 the Orchestrator
reads that failure and plans three agents in three steps (coder_1 again, so its turn-1 draft reaches
it; then a debugger; then the tester); the fixed code passes. Math and general pass in one turn.
Replies depend only on (role, agent type, turn), read from the request.
"""

from __future__ import annotations

import re

from core.methods.topoweaver.prompts import CALL_AGENT, CALL_ORCHESTRATE, CALLS
from core.runtime.config import DomainName
from core.runtime.demo_scenarios import DRAFT_CODE, FINAL_CODE
from core.runtime.scripted import BenchAnswer, MethodDemo, RequestInfo

__all__ = ["CALLS", "DEMO", "bench_reply", "topoweaver_script"]

_ROLE = re.compile(r"^YOUR ROLE: (\w+)", re.M)


def _py(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def _yaml(body: str, lead: str = "") -> str:
    return f"{lead}```yaml\n{body.strip()}\n```"


def agent_type(info: RequestInfo) -> str:
    users = [m for m in info.messages if m.get("role") == "user"]
    found = _ROLE.search(str(users[0].get("content", ""))) if users else None
    return found[1] if found else ""


# --- code ---------------------------------------------------------------------------------------------

_PLAN_CODE_1 = """difficulty: interview
notes: ""
steps:
  - step: 1
    agents:
      - {id: planner_1, type: planner, ref: []}
      - {id: searcher_1, type: searcher, ref: []}
      - {id: algorithmmer_1, type: algorithmmer, ref: []}
  - step: 2
    agents:
      - {id: coder_1, type: coder, ref: [planner_1, searcher_1, algorithmmer_1]}
  - step: 3
    agents:
      - {id: tester_1, type: tester, ref: [coder_1]}"""

_PLAN_CODE_2 = """difficulty: interview
notes: >-
  make_palindrome('x') returned 'xx': the suffix scan starts at i = 1, so an input that is
  already a palindrome is never returned as it is. Start the scan at i = 0.
steps:
  - step: 1
    agents:
      - {id: coder_1, type: coder, ref: []}
  - step: 2
    agents:
      - {id: debugger_1, type: debugger, ref: [coder_1]}
  - step: 3
    agents:
      - {id: tester_1, type: tester, ref: [debugger_1]}"""

_TESTS = _py(
    "assert make_palindrome('') == ''\n"
    "assert make_palindrome('x') == 'x'\n"
    "assert make_palindrome('xyx') == 'xyx'\n"
    "assert make_palindrome('cat') == 'catac'\n"
    "assert make_palindrome('cata') == 'catac'\n"
    "assert make_palindrome('jerry') == 'jerryrrej'\n"
    "assert is_palindrome('aba') and not is_palindrome('ab')"
)

_CODE_WORK: dict[str, dict[int, str]] = {
    "planner": {
        1: "Strategy: find the longest suffix of the input that is a palindrome, then append the reverse of "
        "the prefix in front of it. Edge cases: the empty string, one character, and inputs that already "
        "are palindromes (nothing to append).",
    },
    "searcher": {
        1: "Relevant knowledge: a string is a palindrome when it equals its reverse (s == s[::-1]). The "
        "classic linear-time variant runs KMP's failure function on reverse(s) + '#' + s; for docstring-sized "
        "inputs a quadratic scan over suffix start positions is simpler and enough.",
    },
    "algorithmmer": {
        1: "Components: is_palindrome(s) -> bool by comparison with the reverse; make_palindrome(s): scan start "
        "positions i in increasing order, stop at the first i whose suffix s[i:] is a palindrome, return "
        "s + reverse(s[:i]). O(n^2) time, O(n) extra space.",
    },
    "coder": {
        1: "Implementation of the suffix scan:\n" + _py(DRAFT_CODE),
        2: "My turn-1 draft started the scan at i = 1, which is why 'x' became 'xx'. The scan now starts at "
        "i = 0:\n" + _py(FINAL_CODE),
    },
    "debugger": {
        2: "Checked coder_1's fix against the failing case: for 'x' the suffix at i = 0 is 'x', a palindrome, "
        "so 'x' is returned unchanged; 'xyx' likewise. The loop covers every start position and the final "
        "return handles the empty string. Corrected solution:\n" + _py(FINAL_CODE),
    },
    "tester": {
        1: "Test cases, edge cases first:\n" + _TESTS,
        2: "The same cases again, on the debugged code:\n" + _TESTS,
    },
}


def _code_orchestrator(info: RequestInfo) -> str:
    if info.round <= 1:
        return _yaml(_PLAN_CODE_1, "The task is a classic string problem of interview level.\n")
    return _yaml(_PLAN_CODE_2)


# --- math and general ------------------------------------------------------------------------------

_PLAN_REASONING = """difficulty: {level}
steps:
  - step: 1
    agents:
      - {{id: planner_1, type: planner, ref: []}}
  - step: 2
    agents:
      - {{id: thinker_1, type: thinker, ref: [planner_1]}}
  - step: 3
    agents:
      - {{id: verifier_1, type: verifier, ref: [thinker_1]}}"""

_MATH_WORK = {
    "planner": "Evaluate f at -2, -1 and 0 (none of them makes the denominator x - 2 vanish), then add the three "
    "values over the common denominator 3.",
    "thinker": "f(-2) = (-8)/(-4) = 2; f(-1) = (-5)/(-3) = 5/3; f(0) = (-2)/(-2) = 1. "
    "Sum: 6/3 + 5/3 + 3/3 = 14/3.\nANSWER: \\frac{14}{3}",
    "verifier": "Rechecked each value: 2, 5/3 and 1 are right and they add to 14/3, in lowest terms.\n"
    "ANSWER: \\frac{14}{3}\nVERDICT: CORRECT",
}

_GENERAL_ANSWER = (
    "Yes, but incrementally: one repository removes cross-repo version bumps for a team of five, as long as "
    "CI runs only on changed paths, deploys stay separate and each service moves over with its git history."
)
_GENERAL_WORK = {
    "planner": "Sub-questions: how often do changes span services; what does CI cost; how to migrate safely.",
    "thinker": "Changes that touch an API and its callers become atomic; the risks (slow CI, coupled deploys, "
    f"lost history) each have a cheap guard.\nANSWER: {_GENERAL_ANSWER}",
    "verifier": f"The reasoning weighs both sides and answers each risk.\nANSWER: {_GENERAL_ANSWER}\nVERDICT: CORRECT",
}


def topoweaver_script(info: RequestInfo) -> str:
    """The demo's reply to a TopoWeaver call (orchestrator YAML, or an agent's text)."""
    if info.call == CALL_ORCHESTRATE:
        if info.domain == DomainName.CODE:
            return _code_orchestrator(info)
        return _yaml(_PLAN_REASONING.format(level="introductory" if info.domain == DomainName.MATH else "interview"))
    kind = agent_type(info)
    if info.domain == DomainName.CODE:
        table = _CODE_WORK.get(kind, {})
        scripted = [t for t in table if t <= info.round]
        if scripted:
            return table[max(scripted)]
    else:
        work = (_MATH_WORK if info.domain == DomainName.MATH else _GENERAL_WORK).get(kind)
        if work:
            return work
    return f"{info.role} ({kind or 'agent'}): nothing to add in turn {info.round}."


# --- bench --demo --------------------------------------------------------------------------------------

_BENCH_CODE_PLAN = """difficulty: introductory
steps:
  - step: 1
    agents:
      - {id: coder_1, type: coder, ref: []}
  - step: 2
    agents:
      - {id: tester_1, type: tester, ref: [coder_1]}"""

_BENCH_MATH_PLAN = """difficulty: introductory
steps:
  - step: 1
    agents:
      - {id: thinker_1, type: thinker, ref: []}
  - step: 2
    agents:
      - {id: verifier_1, type: verifier, ref: [thinker_1]}"""


def bench_reply(info: RequestInfo, bench: BenchAnswer) -> str | None:
    """A competent team in ``bench --demo``: a lean introductory plan, the solution the benchmark script
    stands behind, and a smoke test (the problem's own examples are added by the tester's sandbox run).
    None for a call that is not TopoWeaver-R1's."""
    if info.call not in CALLS:
        return None
    domain, answer, entry_point, correct = bench.domain, bench.answer, bench.entry_point, bench.correct
    if info.call != CALL_AGENT:
        return _yaml(_BENCH_CODE_PLAN if domain == "code" else _BENCH_MATH_PLAN)
    kind = agent_type(info)
    if domain == "code":
        if kind == "tester":
            smoke = _py(f"assert callable({entry_point})")
            return f"Smoke test; the docstring examples are the decisive cases.\n{smoke}"
        return f"Implementation of {entry_point}:\n{_py(answer)}"
    verdict = "CORRECT" if correct else "INCORRECT"
    if kind == "verifier":
        return f"Checked the derivation step by step.\nANSWER: {answer}\nVERDICT: {verdict}"
    return f"Working through the problem step by step.\nANSWER: {answer}"


def _own_reply(info: RequestInfo) -> str | None:
    """topoweaver_script for TopoWeaver-R1's own calls; None for any other."""
    return topoweaver_script(info) if info.call in CALLS else None


DEMO = MethodDemo(_own_reply, bench_reply)
