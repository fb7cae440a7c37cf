"""Scripted replies for DMoA's calls (``--demo --strategy dmoa``; bench and training demos).

The pool agents answer in plain text with the demo scenarios' contributions for the step (the same
team and problems as the DyTopo demo: HumanEval/10, a MATH fraction, a monorepo question); whoever
the router picks, each step's text fits it. The Summarizer says [CONTINUE] with what is missing until
the scenario's last step (code: step 3, math and general: step 2), then [FINAL] with the answer; told
it is the last step (L_max), it gives [FINAL] at once. The Selector (router = llm) picks the agents a
competent lead would. Other calls are not DMoA's own (None: the shared round replies answer them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TypeVar

from core.methods.dmoa.events import CALL_SELECT, CALL_STEP, CALL_SUMMARY
from core.runtime.demo_scenarios import SCENARIOS
from core.runtime.scripted import BenchAnswer, MethodDemo, RequestInfo

FINAL_STEP = {"code": 3, "math": 2, "general": 2}

_CONTINUE = {
    "code": {
        1: "The draft has not been run against the edge cases yet ('', single characters, inputs that are "
        "already palindromes).",
        2: "The Tester's cases 'x' and 'xyx' fail: the loop must start at i = 0 before the code can be final.",
    },
    "math": {1: "The Solver's sum 14/3 still needs an independent check of each of the three values."},
    "general": {1: "The critiques are not answered yet: the recommendation must say how each risk is handled."},
}

_SELECTION = {
    "code": {1: {"Designer": 0.55, "Researcher": 0.45}, 2: {"Tester": 0.6, "Developer": 0.4},
             3: {"Developer": 0.7, "Tester": 0.3}},
    "math": {1: {"ProblemParser": 0.5, "Solver": 0.5}, 2: {"Verifier": 0.6, "Solver": 0.4}},
    "general": {1: {"Analyst": 0.6, "Critic": 0.4}, 2: {"Synthesizer": 0.7, "Critic": 0.3}},
}

_DOMAIN_OF_ROLE = {
    "Designer": "code", "Researcher": "code", "Developer": "code", "Tester": "code",
    "ProblemParser": "math", "Solver": "math", "Verifier": "math",
    "Analyst": "general", "Critic": "general", "Synthesizer": "general",
}


def _user_text(info: RequestInfo) -> str:
    return "\n".join(str(m.get("content", "")) for m in info.messages if m.get("role") == "user")


def _system_text(info: RequestInfo) -> str:
    return "\n".join(str(m.get("content", "")) for m in info.messages if m.get("role") == "system")


def request_domain(info: RequestInfo) -> str:
    """DMoA's prompts say "solving one <domain> problem"; the pool agent's role says it too."""
    system = _system_text(info)
    for name in ("code", "math", "general"):
        if f"one {name} problem" in system:
            return name
    return _DOMAIN_OF_ROLE.get(info.role, "code")


T = TypeVar("T")


def _at(table: Mapping[int, T], step: int) -> T:
    known = [n for n in table if n <= step]
    return table[max(known) if known else min(table)]


def _final(domain: str) -> str:
    answer = SCENARIOS[domain].final_answer
    if domain == "code":
        return f"[FINAL]\nThe fixed suffix scan passes every case the Tester listed.\n```python\n{answer.rstrip()}\n```"
    return f"[FINAL] {answer}"


def summary_reply(domain: str, step: int, last: bool) -> str:
    if last or step >= FINAL_STEP.get(domain, 2):
        return _final(domain)
    return f"[CONTINUE] {_at(_CONTINUE[domain], step)}"


def step_reply(domain: str, role: str, step: int) -> str:
    work = SCENARIOS[domain].work.get(role)
    if not work:  # an agent the script does not know (a larger pool): a short, well-formed turn
        return f"{role}, step {step}: I checked the previous responses from my role's side; nothing to correct."
    text = _at(work, step).public
    answer = getattr(_at(work, step), "answer", None)
    return text + (f"\n\nFinal answer: ${answer}$" if answer else "")


def selector_reply(domain: str, step: int) -> str:
    weights = _at(_SELECTION[domain], step)
    return json.dumps({"agents": list(weights), "weights": weights})


def dmoa_script(info: RequestInfo) -> str | None:
    """The demo's reply to a DMoA call; None for a call DMoA shares with the team methods."""
    domain = request_domain(info)
    if info.call == CALL_SUMMARY:
        return summary_reply(domain, info.round, "This is the last step" in _user_text(info))
    if info.call == CALL_SELECT:
        return selector_reply(domain, info.round)
    if info.call == CALL_STEP:
        return step_reply(domain, info.role, info.round)
    return None


def bench_reply(info: RequestInfo, bench: BenchAnswer) -> str | None:
    """DMoA's calls about a benchmark problem (core.demo.bench_script): the answer role states the
    dataset's answer, the Summarizer gives it as [FINAL] at step 2 (or at once when it is the last)."""
    if info.call not in (CALL_STEP, CALL_SUMMARY, CALL_SELECT):
        return None
    domain, answer = bench.domain, bench.answer
    fenced = f"```python\n{answer.rstrip()}\n```" if domain == "code" else answer
    if info.call == CALL_SUMMARY:
        last = "This is the last step" in _user_text(info)
        if info.round >= 2 or last:
            return f"[FINAL]\n{fenced}"
        return "[CONTINUE] The draft is not verified yet."
    if info.call == CALL_SELECT:
        lead = "Developer" if domain == "code" else "Solver"
        other = "Tester" if domain == "code" else "Verifier"
        return json.dumps({"agents": [lead, other], "weights": {lead: 0.6, other: 0.4}})
    if info.role in ("Developer", "Solver"):
        if domain == "code":
            return f"Step {info.round}: the solution.\n{fenced}"
        return f"So the answer is $\\boxed{{{answer}}}$."
    return f"{info.role}, step {info.round}: the current solution holds from my role's side."


DEMO = MethodDemo(dmoa_script, bench_reply)
