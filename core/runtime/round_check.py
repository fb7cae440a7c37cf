"""After each round of a code task: run the implementing role's latest code against the testing role's
tests and the problem's own examples, in the sandbox, so "tests pass" is a fact and not a claim.

The engine feeds the result to the Manager (who may not end the run as solved while tests fail) and
into every worker's memory for the next round.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.evaluation.extract import docstring_examples, extract_tests, latest_code
from core.evaluation.sandbox import IsolationRefused, SandboxLimits, arun_code, isolation_status
from core.runtime import events as ev
from core.runtime.engine import AgentResult, Evaluation, RunAborted

NO_CODE = "NO_CODE"


class CodeExecutionEvaluator:
    def __init__(
        self,
        *,
        implementer: str = "Developer",
        tester: str = "Tester",
        limits: SandboxLimits | None = None,
        use_problem_examples: bool = True,
    ) -> None:
        self.implementer = implementer
        self.tester = tester
        self.limits = limits or SandboxLimits(wall_seconds=10.0, cpu_seconds=10.0, memory_mb=512)
        self.use_problem_examples = use_problem_examples
        self._code_history: list[str] = []  # the implementer's outputs, oldest first
        self._tests: list[str] = []  # the tester's latest tests (they revise them as they go)
        self._isolation_told = False

    def collect(self, outputs: Mapping[str, AgentResult]) -> None:
        """Take in a round's outputs: the implementer's code, the tester's latest tests. Each evaluation does; a
        fork does it for each recorded round it replays, so its first evaluation runs what the parent's next
        one would have run."""
        implementer = outputs.get(self.implementer)
        if implementer is not None and implementer.public:
            self._code_history.append(implementer.public)
        tester = outputs.get(self.tester)
        if tester is not None:
            fresh = extract_tests(tester.public)
            if fresh:
                self._tests = fresh

    async def evaluate(self, round_no: int, problem: str, outputs: Mapping[str, AgentResult]) -> Evaluation | None:
        self.collect(outputs)
        tests = list(self._tests)
        if self.use_problem_examples:
            tests += [t for t in docstring_examples(problem) if t not in tests]
        code = latest_code(self._code_history)
        if not code:
            detail = f"no code from {self.implementer} yet"
            feedback = f"Tests not run: {detail}."
            event = ev.TestRun(round=round_no, outcome=NO_CODE, passed=False, detail=detail, feedback=feedback)
            return Evaluation(passed=False, feedback=feedback, events=[event])
        try:
            result = await arun_code(code, tests, self.limits)
        except IsolationRefused as exc:  # the run asked for code to run: it cannot go on as asked
            raise RunAborted(str(exc)) from None
        warnings = self._isolation_notice(round_no)
        summary = result.summary() if tests else f"{result.outcome} (no tests found: the code only ran)"
        feedback = f"Ran {self.implementer}'s latest code against {len(tests)} tests: {summary}"
        if not result.passed and result.traceback:
            feedback += "\n" + "\n".join(result.traceback.strip().splitlines()[-6:])
        event = ev.TestRun(
            round=round_no,
            outcome=str(result.outcome),
            passed=result.passed and bool(tests),
            detail=summary,
            failing_test=result.failing_test,
            source_agent=self.implementer,
            tests_agent=self.tester if self._tests else "problem examples",
            duration_s=round(result.duration_s, 3),
            feedback=feedback,
        )
        return Evaluation(passed=event.passed, feedback=feedback, events=[*warnings, event])

    def _isolation_notice(self, round_no: int) -> list[ev.Event]:
        """Once per run: say so when generated code runs without the bubblewrap jail (not Linux, no bwrap)."""
        if self._isolation_told:
            return []
        self._isolation_told = True
        isolated, message = isolation_status()
        return [] if isolated else [ev.Notice(round=round_no, severity=ev.Severity.WARNING, message=message)]
