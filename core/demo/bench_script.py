"""Scripted replies for benchmark problems, served by core.demo.server (``swarm-tui bench --demo``).

The script finds which dataset problem a request is about (the text after ``PROBLEM:`` in the first
user message is the problem's task text), then answers like a competent team: for HumanEval the
Developer writes the dataset's canonical solution, for MATH the Solver gives the reference answer, and
the Manager ends the run in round 2 with that answer (or at the last round). ``correct=False`` gives
the same conversation with a wrong function / a wrong number, so scoring can be checked both ways.
Replies depend only on (problem, role, call, round), never on routed messages, so the descriptors, and
with them the similarity matrices, are the same whichever topology strategy runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core.demo.scripts import demo_script, method_demos
from core.methods.catalogue import load_all
from core.runtime.config import DomainName
from core.runtime.events import CallKind
from core.runtime.scripted import BenchAnswer, RequestInfo, Script

if TYPE_CHECKING:  # benchmark imports this module; the import is only for type hints
    from core.datasets.problems import Problem

SOLO_ROLE = "Solo"
SOLO_CALL = "single"
WRONG_MATH_ANSWER = "-1234567"
_PROBLEM_MARK = "PROBLEM:\n"
_SHARED_CALLS = frozenset(kind.value for kind in CallKind)


def wrong_code(entry_point: str) -> str:
    return f"def {entry_point}(*args, **kwargs):\n    return None\n"


def _fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


class _Index:
    """Task text -> problem, matched exactly at the PROBLEM: mark of a request."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.by_task = {p.task: p for p in problems}
        # Longest first, so a task that happens to start with a shorter task's text still wins.
        self.tasks = sorted(self.by_task, key=len, reverse=True)

    def find(self, info: RequestInfo) -> Problem | None:
        """The problem a request is about, at the PROBLEM: mark of its first user message, or of its system
        prompt (DMoA puts the query there, as the paper does)."""
        users = [m for m in info.messages if m.get("role") == "user"]
        systems = [m for m in info.messages if m.get("role") == "system"]
        for message in users[:1] + systems[:1]:
            text = str(message.get("content", ""))
            at = text.find(_PROBLEM_MARK)
            if at < 0:
                continue
            rest = text[at + len(_PROBLEM_MARK) :]
            for task in self.tasks:
                if rest.startswith(task) and (len(rest) == len(task) or rest[len(task) :].startswith("\n")):
                    return self.by_task[task]
        return None


def _descriptors(problem: Problem, role: str, round_no: int) -> tuple[str, str]:
    fn = problem.entry_point or "the function"
    late = round_no >= 3
    table: dict[str, tuple[str, str]] = {
        "Developer": (
            f"I need the Tester's failing inputs for {fn} to fix the code."
            if late
            else f"I need the Tester's report on failing test cases of {fn}.",
            f"I provide the complete Python implementation of {fn}.",
        ),
        "Researcher": (
            f"I need the Developer's {fn} implementation to analyse its time complexity.",
            f"I provide the algorithm choice and the complexity analysis for {fn}.",
        ),
        "Tester": (
            f"I need the Developer's implementation of {fn} to verify against test cases.",
            f"I provide test cases for {fn} with expected results and a report of failures.",
        ),
        "Designer": (
            f"I need the final implementation of {fn} to check its signature."
            if late
            else f"I need the algorithm choice to shape the signature of {fn}.",
            f"I provide the API design: the signature and type hints of {fn}.",
        ),
        "ProblemParser": (
            "I need objections to my solving plan, if any.",
            "I provide the problem analysis: the conditions, the target and a solving plan.",
        ),
        "Solver": (
            "I need the verifier's corrections to my derivation.",
            "I provide a step-by-step solution and the final answer.",
        ),
        "Verifier": (
            "I need the Solver's detailed solution to verify each step.",
            "I provide a step-by-step verification of the solution with any errors found.",
        ),
    }
    return table.get(role, ("I need the team's current results.", f"I provide the {role}'s contribution."))


_NOTES = (
    "the interface and the constraints are settled; nothing blocks the solution.",
    "reviewed the latest draft against the requirements; no open questions from my side.",
    "edge cases (empty input, single element, large values) are covered by the current plan.",
)


def oracle_answer(problem: Problem, correct: bool) -> str:
    """The solution this script stands behind, from the problem's reference: a program for code (HumanEval's
    canonical solution, MBPP's code, an APPS solution or a table of its cases), the letter for multiple
    choice, the reference answer for math. ``correct=False``: a wrong one of the same kind."""
    if problem.domain == DomainName.CODE:
        if correct:
            return problem.reference_code or problem.prompt + problem.canonical_solution
        return wrong_code(problem.entry_point) if problem.entry_point else "print('no idea')\n"
    if problem.choices:
        letters = [chr(ord("A") + i) for i in range(len(problem.choices))]
        return problem.reference if correct else next(x for x in letters if x != problem.reference)
    return problem.reference if correct else WRONG_MATH_ANSWER


def oracle_final(problem: Problem, correct: bool) -> str:
    """The final answer as the team's Manager gives it (code in a fence)."""
    answer = oracle_answer(problem, correct)
    return _fenced(answer) if problem.domain == DomainName.CODE else answer



def _work(problem: Problem, role: str, round_no: int, correct: bool) -> dict[str, Any]:
    answer = oracle_answer(problem, correct)
    fn = problem.entry_point or "the program"
    reply: dict[str, Any] = {"private": {}}
    if role == "Developer":
        reply["public"] = f"Implementation of {fn} (round {round_no}):\n{_fenced(answer)}"
    elif role == "Tester":
        # A smoke test on top of the docstring examples the evaluator adds by itself: problems
        # without examples still get a test run, so the Manager may end the run.
        smoke = _fenced(f"assert callable({problem.entry_point})" if problem.entry_point else "assert True")
        reply["public"] = f"Smoke test; the docstring examples are the decisive cases.\n{smoke}"
    elif role == "Solver":
        reply["public"] = f"Working step by step through the problem, the final answer is $\\boxed{{{answer}}}$."
        reply["answer"] = answer
    elif role == "Verifier":
        reply["public"] = f"Checked the Solver's derivation line by line: the answer {answer} holds."
    else:
        # Different words each round: a team repeating itself verbatim would end the run as converged.
        reply["public"] = f"{role}, round {round_no}: {_NOTES[round_no % len(_NOTES)]}"
    # The descriptors a work reply carries are those for the next routing (single-pass protocol).
    reply["query"], reply["key"] = _descriptors(problem, role, round_no + 1)
    return reply


def _manager(problem: Problem, info: RequestInfo, correct: bool) -> dict[str, Any]:
    if info.call == CallKind.PLAN:
        return {
            "goal": "Round 1: every role drafts its part of a complete solution.",
            "terminate": False,
            "reasoning": "Start with every role contributing in parallel.",
            "final_answer": "",
        }
    text = "\n".join(str(m.get("content", "")) for m in info.messages if m.get("role") == "user")
    if info.round >= 2 or "This was the last round" in text:
        final = oracle_final(problem, correct)
        return {"goal": "", "terminate": True, "reasoning": "The solution is ready.", "final_answer": final}
    return {
        "goal": f"Round {info.round + 1}: verify the draft and fix anything that fails.",
        "terminate": False,
        "reasoning": "A draft exists but is not verified yet.",
        "final_answer": "",
    }


def _solo(problem: Problem, correct: bool) -> str:
    answer = oracle_answer(problem, correct)
    if problem.domain == DomainName.CODE:
        return f"Here is the solution.\n{_fenced(answer)}"
    if problem.choices:
        return f"Answer: {answer}"
    return json.dumps({"answer": answer})


class _BenchScript:
    """A Script answering requests about the benchmark's problems; requests about anything else get the
    demo's replies (so a stray problem still gets a well-formed answer)."""

    def __init__(self, problems: Sequence[Problem], correct: bool) -> None:
        self.index = _Index(problems)
        self.correct = correct
        self._tasks = {" ".join(task.split()) for task in self.index.by_task}

    def plays_instead(self, problem: str, domain: str) -> str:
        """"" for a problem of the benchmark (it plays that one), else the demo scenario it plays."""
        if " ".join(problem.split()) in self._tasks:
            return ""
        return demo_script.plays_instead(problem, domain)

    def __call__(self, info: RequestInfo) -> str:
        correct = self.correct
        problem = self.index.find(info)
        if problem is None:
            return demo_script(info)
        if info.role == SOLO_ROLE:
            return _solo(problem, correct)
        bench = BenchAnswer(problem.domain, oracle_answer(problem, correct), problem.entry_point, correct)
        reply = _method_bench_reply(info, bench)
        if reply is not None:  # the method's own call (MethodInfo.demo's bench_reply)
            return reply
        if info.role == "Manager" or info.call in (CallKind.PLAN, CallKind.MANAGER):
            return json.dumps(_manager(problem, info, correct))
        if info.call == CallKind.DESCRIPTORS:
            query, key = _descriptors(problem, info.role, info.round)
            return json.dumps({"query": query, "key": key})
        return json.dumps(_work(problem, info.role, info.round, correct))


def _method_bench_reply(info: RequestInfo, bench: BenchAnswer) -> str | None:
    """The reply of the method whose call this is (the loaded methods first; a call none of them claims
    and the shared round calls do not name loads every method once, as core.demo.scripts does)."""
    for attempt in range(2):
        for script in method_demos():
            reply = script.bench_reply(info, bench) if script.bench_reply else None
            if reply is not None:
                return reply
        if attempt or not info.call or info.call in _SHARED_CALLS:
            break
        load_all()
    return None


def benchmark_script(problems: Sequence[Problem], *, correct: bool = True) -> Script:
    """A Script answering requests about ``problems``; requests about anything else get the demo's
    replies (so a stray problem still gets a well-formed answer)."""
    return _BenchScript(problems, correct)
