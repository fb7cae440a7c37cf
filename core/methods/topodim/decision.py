"""TopoDIM's decision (Sun et al., "One-shot Topology Generation of Diverse Interaction Modes for Multi-Agent
Systems", Fig. 13 the decision node; Alg. 1 l.20 the one round): what the decision-maker is told about the
candidates, the answer taken from its reply (else the team's best), and the final answer's check.

The candidate and final checks run code only in the code domain with the sandbox on, against the problem's
own docstring examples (as the public code's decision node does); the answer pick is pure.
"""

from __future__ import annotations

import ast
import asyncio
from typing import TYPE_CHECKING

from core.evaluation.extract import docstring_examples, latest_code
from core.evaluation.math_answers import answer_or_text, extract_answer
from core.runtime import events as ev
from core.runtime.engine import Evaluation
from core.runtime.run_context import notice

if TYPE_CHECKING:
    from core.evaluation.sandbox import SandboxResult
    from core.runtime.rosters import Team
    from core.runtime.run_context import RunContext


def solution_code(text: str) -> str:
    """The code in an answer when it defines something (a function or class): a tester's bare asserts
    are not a candidate solution."""
    code = latest_code([text])
    try:
        tree = ast.parse(code) if code else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    if tree is None or not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for n in tree.body):
        return ""
    return code


async def candidate_checks(ctx: RunContext, answers: dict[str, str]) -> tuple[str, dict[str, bool]]:
    """Code domain with the sandbox on: run every candidate against the problem's own examples (as the
    public code's decision node does) and say which pass. (text for the decision-maker, verdicts)."""
    if ctx.spec.team.name != "code":
        return "", {}
    if not ctx.spec.runs_code:
        return "SANDBOX: code execution is off in this run, so no candidate was run.\n\n", {}
    examples = docstring_examples(ctx.spec.problem)
    if not examples:
        return "SANDBOX: the problem has no examples to run the candidates against.\n\n", {}
    from core.evaluation.sandbox import SandboxLimits, arun_code

    limits = ctx.spec.sandbox_limits or SandboxLimits()
    codes = {name: solution_code(text) for name, text in answers.items()}
    codes = {name: code for name, code in codes.items() if code}
    if not codes:
        return "SANDBOX: no candidate contains code to run.\n\n", {}
    try:
        results = await asyncio.gather(*(arun_code(code, examples, limits) for code in codes.values()))
    except OSError as exc:
        notice(ctx, f"TopoDIM: the sandbox could not start ({exc}): candidates not checked", "warning")
        return "SANDBOX: the candidates could not be run.\n\n", {}
    lines, verdicts = [], {}
    for name, result in zip(codes, results, strict=True):
        verdicts[name] = result.passed
        lines.append(f"- {name}: {result.summary()}")
        ctx.emit(_examples_run(result, f"candidate of {name}", name))
    text = f"SANDBOX: each candidate's code run against the problem's {len(examples)} examples:\n"
    return text + "\n".join(lines) + "\n\n", verdicts


def _examples_run(result: SandboxResult, what: str, agent: str) -> ev.TestRun:
    """A sandbox run of ``agent``'s code (``what``: a candidate, the final answer) against the problem's own
    examples, as the run's event (TopoDIM has one round)."""
    return ev.TestRun(
        round=1,
        outcome=str(result.outcome),
        passed=result.passed,
        detail=f"{what}: {result.summary()}",
        failing_test=result.failing_test,
        source_agent=agent,
        tests_agent="problem examples",
        duration_s=round(result.duration_s, 3),
    )


def pick_answer(team: Team, text: str, answers: dict[str, str], verdicts: dict[str, bool]) -> tuple[str, str]:
    """The decision-maker's answer in the domain's form, else the team's best (a candidate that passed
    the examples, then the answer role's, then anyone's)."""
    domain = team.name
    if text:
        if domain == "code":
            code = latest_code([text])
            if code:
                return f"```python\n{code}\n```", "manager"
        elif domain == "math":
            found = extract_answer(text)
            if found:
                return found, "manager"
        else:
            return text, "manager"
    passing = [n for n, ok in verdicts.items() if ok]
    ranked = [n for n in dict.fromkeys([*passing, team.answer_role, *answers]) if answers.get(n)]
    for name in ranked:
        if domain == "code":
            code = solution_code(answers[name])
            if code:
                return f"```python\n{code}\n```", f"extracted:{name}"
        elif domain == "math":
            found = extract_answer(answers[name])
            if found:
                return found, f"extracted:{name}"
        else:
            return answers[name], f"extracted:{name}"
    if text:
        return (answer_or_text(text) if domain == "math" else text), "manager"
    return "", ""


async def final_check(ctx: RunContext, answer: str, decider: str) -> None:
    """With the sandbox on (code): run the final answer against the problem's examples, so the run says
    whether they pass (RunFinished.solved)."""
    if ctx.spec.team.name != "code" or not ctx.spec.runs_code:
        return
    code = latest_code([answer])
    examples = docstring_examples(ctx.spec.problem)
    if not code or not examples:
        return
    from core.evaluation.sandbox import SandboxLimits, arun_code

    try:
        result = await arun_code(code, examples, ctx.spec.sandbox_limits or SandboxLimits())
    except OSError as exc:
        notice(ctx, f"TopoDIM: the sandbox could not start ({exc}): the final answer was not run", "warning")
        return
    event = _examples_run(result, "final answer", decider)
    ctx.emit(event)
    ctx.record(Evaluation(passed=result.passed, feedback=event.detail, events=[event]))
