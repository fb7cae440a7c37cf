"""Verdicts: whether a final answer solves a problem (HumanEval's hidden tests in the sandbox, MATH by
equivalence)."""

from __future__ import annotations

import ast
import asyncio
from dataclasses import dataclass

from core.datasets.problems import Problem
from core.evaluation.extract import latest_code
from core.evaluation.math_answers import answer_or_text, answers_equivalent
from core.evaluation.sandbox import SandboxLimits, arun_code


def _defines(code: str, name: str) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name for n in tree.body)


def humaneval_program(problem: Problem, code: str) -> str:
    """The program the hidden tests run against. A full definition of the entry point goes after the
    prompt (whose imports and helpers it may rely on) and overrides the stub; anything else is a
    completion of the stub's body, as in HumanEval."""
    if _defines(code, problem.entry_point):
        return f"{problem.prompt}\n\n{code}\n"
    lines = code.splitlines()
    first = next((line for line in lines if line.strip()), "")
    if first and not first[0].isspace():  # a body that lost its indentation in a fenced block
        code = "\n".join(f"    {line}" if line.strip() else line for line in lines)
    return f"{problem.prompt}{code}\n"


@dataclass
class Score:
    correct: bool
    detail: str


async def score_code(problem: Problem, final_answer: str, limits: SandboxLimits | None = None) -> Score:
    code = latest_code([final_answer])
    if not code:
        return Score(False, "no code in the final answer")
    tests = f"{problem.test}\n\ncheck({problem.entry_point})\n"
    result = await arun_code(humaneval_program(problem, code), tests, limits or SandboxLimits())
    return Score(result.passed, result.summary())


async def score_math(problem: Problem, final_answer: str) -> Score:
    candidate = answer_or_text(final_answer)
    if not candidate:
        return Score(False, "no final answer")
    same = await asyncio.to_thread(answers_equivalent, candidate, problem.reference)
    verdict = "equivalent to" if same else "not equivalent to"
    return Score(same, f"{candidate[:200]} is {verdict} {problem.reference[:200]}")


async def score(problem: Problem, final_answer: str, limits: SandboxLimits | None = None) -> Score:
    if problem.domain == "code":
        return await score_code(problem, final_answer, limits)
    return await score_math(problem, final_answer)
