"""Verdicts: whether a final answer solves a problem, by the problem's format (core.datasets.formats).

Code runs in the sandbox against the problem's own tests; a pass must mean the code computes the answer:
* only plain data may come back from the code (a proxy object whose ``__sub__`` and ``__abs__`` return 0
  would otherwise satisfy ``abs(f(x) - y) < 1e-6``): a call of the entry point that returns anything else
  fails with a clear reason;
* HumanEval's tests run against the problem's own helpers (its prompt's other functions are defined again
  after the candidate's code), so redefining a helper the tests call (HumanEval/32's ``poly``) changes nothing.
Math answers compare by equivalence; multiple choice by the chosen letter; stdin/stdout problems run once per
case with a time limit each.
"""

from __future__ import annotations

import ast
import asyncio
import re
from dataclasses import dataclass, replace

from core.datasets.formats import LETTERS
from core.datasets.problems import Problem
from core.evaluation.extract import latest_code
from core.evaluation.math_answers import answer_or_text, answers_equivalent
from core.evaluation.sandbox import SandboxLimits, arun_code

REJECTED_NON_DATA = "non-data return"
_NON_DATA_MARK = "returned a non-data object"

# Defined in the tests' namespace (the judge's): the candidate's function wrapped so that only plain data
# comes back. The judge decodes data into its own values; anything else arrives as a proxy of another type.
_PLAIN_DATA_GUARD = f'''
def _plain_data_only(function):
    from decimal import Decimal
    from fractions import Fraction
    plain = (int, float, complex, str, bytes, bool, type(None), Fraction, Decimal)
    def check(value, depth=0):
        if isinstance(value, plain) and type(value) in plain:
            return True
        if type(value) in (list, tuple, set, frozenset) and depth < 50:
            return all(check(v, depth + 1) for v in value)
        if type(value) is dict and depth < 50:
            return all(check(k, depth + 1) and check(v, depth + 1) for k, v in value.items())
        return type(value).__name__ == "ndarray"
    def call(*args, **kwargs):
        result = function(*args, **kwargs)
        if not check(result):
            raise AssertionError("the code {_NON_DATA_MARK} (" + type(result).__name__ + "), not plain data")
        return result
    return call
'''


@dataclass
class Score:
    correct: bool
    detail: str
    rejected: str = ""  # why a pass was refused (REJECTED_NON_DATA), for the report's count


def _defines(code: str, name: str) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name for n in tree.body)


def _prompt_helpers(problem: Problem) -> str:
    """The prompt's own top-level definitions other than the entry point (HumanEval/32's ``poly``), as source."""
    try:
        tree = ast.parse(problem.prompt + "\n    pass\n")
    except SyntaxError:
        return ""
    kept = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and n.name != problem.entry_point]
    return "\n\n".join(ast.unparse(n) for n in kept)


def humaneval_program(problem: Problem, code: str) -> str:
    """The program the hidden tests run against. A full definition of the entry point goes after the
    prompt (whose imports and helpers it may rely on) and overrides the stub; anything else is a
    completion of the stub's body, as in HumanEval. The prompt's helpers are defined again at the end, so
    the tests call the problem's helpers, not the candidate's."""
    if _defines(code, problem.entry_point):
        program = f"{problem.prompt}\n\n{code}\n"
    else:
        lines = code.splitlines()
        first = next((line for line in lines if line.strip()), "")
        if first and not first[0].isspace():  # a body that lost its indentation in a fenced block
            code = "\n".join(f"    {line}" if line.strip() else line for line in lines)
        program = f"{problem.prompt}{code}\n"
    helpers = _prompt_helpers(problem)
    return f"{program}\n\n# the problem's own helpers, whatever the code defined\n{helpers}\n" if helpers else program


def _verdict(result: object) -> Score:
    summary = result.summary()  # type: ignore[attr-defined]
    passed = bool(result.passed)  # type: ignore[attr-defined]
    rejected = REJECTED_NON_DATA if (not passed and _NON_DATA_MARK in summary) else ""
    return Score(passed, summary, rejected)


async def score_code(problem: Problem, final_answer: str, limits: SandboxLimits | None = None) -> Score:
    code = latest_code([final_answer])
    if not code:
        return Score(False, "no code in the final answer")
    entry = problem.entry_point
    tests = f"{problem.test}\n\n{_PLAIN_DATA_GUARD}\ncheck(_plain_data_only({entry}))\n"
    result = await arun_code(humaneval_program(problem, code), tests, limits or SandboxLimits())
    return _verdict(result)


async def score_mbpp(problem: Problem, final_answer: str, limits: SandboxLimits | None = None) -> Score:
    code = latest_code([final_answer])
    if not code:
        return Score(False, "no code in the final answer")
    guard = f"{_PLAIN_DATA_GUARD}\n{problem.entry_point} = _plain_data_only({problem.entry_point})\n" \
        if problem.entry_point else ""
    tests = [f"{problem.setup}\n{guard}\n{test}" for test in problem.tests]
    return _verdict(await arun_code(code, tests, limits or SandboxLimits()))


_STDIO_HARNESS = '''
import io as _io, sys as _sys
def _run_program(stdin_text):
    source = {code!r}
    _sys.stdin, out = _io.StringIO(stdin_text), _io.StringIO()
    saved = _sys.stdout
    _sys.stdout = out
    try:
        exec(compile(source, "<solution>", "exec"), {{"__name__": "__main__"}})
    except SystemExit:
        pass
    finally:
        _sys.stdout, _sys.stdin = saved, _sys.__stdin__
    return out.getvalue()
'''


async def score_stdio(problem: Problem, final_answer: str, limits: SandboxLimits | None = None,
                      case_seconds: float = 6.0) -> Score:
    """Each (input, output) case in its own sandbox run with ``case_seconds``; outputs compare by tokens."""
    code = latest_code([final_answer])
    if not code:
        return Score(False, "no code in the final answer")
    base = limits or SandboxLimits()
    per_case = replace(base, wall_seconds=min(base.wall_seconds, case_seconds))
    harness = _STDIO_HARNESS.format(code=code)
    for number, (stdin_text, expected) in enumerate(problem.io_cases, start=1):
        test = f"assert _run_program({stdin_text!r}).split() == {expected!r}.split(), 'wrong output'"
        result = await arun_code(harness, [test], per_case)
        if not result.passed:
            return Score(False, f"case {number} of {len(problem.io_cases)}: {result.summary()}")
    return Score(True, f"all {len(problem.io_cases)} cases pass")


_LETTER_PATTERNS = (
    re.compile(r"\\boxed\{\s*\(?([A-Z])\)?\s*\}"),
    re.compile(r"(?:answer|choice|option)[\"']?\s*(?:is|:)?\s*[\"']?\(?\s*([A-Z])\b\)?", re.I),
    re.compile(r"^\s*\(?([A-Z])\)?\s*(?:[).:]|$)", re.M),
)


def chosen_letter(text: str, n_choices: int) -> str:
    """The letter a final answer chose (A..), or "" when it names none of the choices."""
    allowed = LETTERS[:n_choices]
    for pattern in _LETTER_PATTERNS:
        for found in pattern.findall(text):
            letter = str(found).upper()
            if letter in allowed:
                return letter
    return ""


async def score_choice(problem: Problem, final_answer: str) -> Score:
    letter = chosen_letter(final_answer, len(problem.choices))
    if not letter:
        return Score(False, "no choice letter in the final answer")
    return Score(letter == problem.reference, f"chose {letter}, the answer is {problem.reference}")


async def score_math(problem: Problem, final_answer: str) -> Score:
    candidate = answer_or_text(final_answer)
    if not candidate:
        return Score(False, "no final answer")
    same = await asyncio.to_thread(answers_equivalent, candidate, problem.reference)
    verdict = "equivalent to" if same else "not equivalent to"
    return Score(same, f"{candidate[:200]} is {verdict} {problem.reference[:200]}")


async def score(problem: Problem, final_answer: str, limits: SandboxLimits | None = None) -> Score:
    if problem.kind == "humaneval":
        return await score_code(problem, final_answer, limits)
    if problem.kind == "mbpp":
        return await score_mbpp(problem, final_answer, limits)
    if problem.kind == "apps":
        return await score_stdio(problem, final_answer, limits)
    if problem.choices:
        return await score_choice(problem, final_answer)
    return await score_math(problem, final_answer)
