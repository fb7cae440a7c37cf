"""TopoWeaver-R1's end-of-turn checks (Alg. 1, l. 13–14: PASSED stops the run, anything else goes into the
history): in the code domain the tester's sandbox run of the code it refs against the problem's examples plus
its own cases (statuses mapped to the paper's, core.methods.topoweaver.plan.paper_status); elsewhere the
verifier's VERDICT line [App. C.5]."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.evaluation.extract import docstring_examples, extract_tests, latest_code
from core.evaluation.math_answers import answer_or_text, extract_answer
from core.evaluation.sandbox import SandboxLimits, arun_code
from core.methods.topoweaver.plan import CODER, DEBUGGER, TESTER, THINKER, VERIFIER, Plan, paper_status
from core.methods.topoweaver.prompts import LOG_CHARS, trimmed
from core.runtime import events as ev
from core.runtime.config import DomainName
from core.runtime.engine import AgentResult, Evaluation, RunAborted
from core.runtime.run_context import start_phase

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext

PHASE_CHECK = "test"
NO_CODE = "NO_CODE"
NO_TESTS = "NO_TESTS"
CORRECT, INCORRECT, NO_VERDICT = "CORRECT", "INCORRECT", "NO_VERDICT"
_VERDICT = re.compile(r"VERDICT\s*[:=]\s*\**\s*(CORRECT|INCORRECT)", re.I)
_ANSWER = re.compile(r"^\s*\**ANSWER\**\s*[:=]\s*(.+?)\s*$", re.I | re.M)


@dataclass
class Check:
    """A turn's check: its status (the paper's), whether it passed, and what it examined."""

    status: str
    passed: bool
    source: str = ""
    failing_test: str = ""
    log: str = ""
    answer: str = ""  # what the check examined: the code (code) or the answer (otherwise)


def answer_line(text: str) -> str:
    """The last ``ANSWER: ...`` line of a reply, or ''."""
    found = _ANSWER.findall(text or "")
    return found[-1].strip() if found else ""


def _type(plan: Plan, agent_id: str) -> str:
    agent = plan.agent(agent_id)
    return agent.type if agent is not None else ""


def _tested_code(plan: Plan, tester_refs: list[str], outputs: dict[str, AgentResult]) -> tuple[str, str, str]:
    """(code, the agent that wrote it, who was asked): the newest coder's or debugger's code the tester refs."""
    sources = sorted(
        (plan.agent(r) for r in tester_refs if _type(plan, r) in (CODER, DEBUGGER)),
        key=lambda a: -a.step if a is not None else 0,
    )
    asked = " or ".join(a.id for a in sources if a is not None) or "a coder"
    for agent in sources:
        if agent is not None and agent.id in outputs:
            code = latest_code([outputs[agent.id].public])
            if code:
                return code, agent.id, asked
    return "", "", asked


async def code_check(
    ctx: RunContext, turn: int, plan: Plan, outputs: dict[str, AgentResult], sandbox: SandboxLimits
) -> Check:
    """The tester: the sandbox run of the code it refs, against the problem's examples and its own cases."""
    start_phase(ctx, PHASE_CHECK, "the tester runs the code in the sandbox")
    testers = [a for a in plan.steps[-1] if a.type == TESTER]
    tester = next(a for a in testers if any(_type(plan, r) in (CODER, DEBUGGER) for r in a.intra_refs))
    code, source, asked = _tested_code(plan, tester.intra_refs, outputs)
    tests = list(docstring_examples(ctx.spec.problem))
    own = []
    for agent in testers:
        for case in extract_tests(outputs[agent.id].public if agent.id in outputs else ""):
            if case not in tests:
                tests.append(case)
                own.append(case)
    if not code:
        detail = f"no code from {asked}"
        ctx.emit(ev.TestRun(round=turn, outcome=NO_CODE, passed=False, detail=detail, tests_agent=tester.id))
        ctx.record(Evaluation(passed=False, feedback=f"Tests not run: {detail}."))
        return Check(NO_CODE, False, log=detail)
    try:
        result = await arun_code(code, tests, sandbox)
    except OSError as exc:
        raise RunAborted(f"the sandbox could not run the code: {exc}") from None
    status = paper_status(str(result.outcome))
    passed = result.passed and bool(tests)
    if result.passed and not tests:
        status = NO_TESTS
    summary = result.summary()
    if status != str(result.outcome):
        summary = summary.replace(str(result.outcome), f"{status} (sandbox: {result.outcome})", 1)
    if not tests:
        summary += " (no tests: the code only ran)"
    log = "\n".join(result.traceback.strip().splitlines()[-8:]) if result.traceback else ""
    ctx.emit(
        ev.TestRun(
            round=turn,
            outcome=status,
            passed=passed,
            detail=summary,
            failing_test=result.failing_test,
            source_agent=source,
            tests_agent=tester.id if own else "problem examples",
            duration_s=round(result.duration_s, 3),
        )
    )
    feedback = f"Ran {source}'s code against {len(tests)} tests: {summary}" + (f"\n{log}" if log else "")
    ctx.record(Evaluation(passed=passed, feedback=feedback))
    fenced = f"```python\n{code}\n```"
    return Check(status, passed, source, result.failing_test, trimmed(log or summary, LOG_CHARS), fenced)


async def answer_check(ctx: RunContext, plan: Plan, outputs: dict[str, AgentResult], domain: str) -> Check:
    """The verifier [App. C.5]: its last VERDICT line, and the answer it states (else its thinkers')."""
    start_phase(ctx, PHASE_CHECK, "the verifier's answer check")
    verifier = next(a for a in plan.steps[-1]
                    if a.type == VERIFIER and any(_type(plan, r) == THINKER for r in a.intra_refs))
    text = outputs[verifier.id].public if verifier.id in outputs else ""
    verdicts = _VERDICT.findall(text)
    status = verdicts[-1].upper() if verdicts else NO_VERDICT
    thinkers = sorted((plan.agent(r) for r in verifier.intra_refs if _type(plan, r) == THINKER),
                      key=lambda a: -a.step if a is not None else 0)
    answer, source = answer_line(text), verifier.id
    if not answer:
        for agent in thinkers:
            if agent is not None and agent.id in outputs and outputs[agent.id].public:
                answer, source = answer_line(outputs[agent.id].public), agent.id
                if not answer:
                    body = outputs[agent.id].public
                    is_math = domain == DomainName.MATH
                    answer = (extract_answer(body) or answer_or_text(body)) if is_math else body
                break
    log = trimmed(text, LOG_CHARS) if text else "the verifier gave no output"
    return Check(status, status == CORRECT, source, "", log, answer)
