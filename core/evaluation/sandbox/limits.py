"""What a sandbox run may use and what it returns: the limits, the outcome and the result."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Outcome(StrEnum):
    PASSED = "PASSED"
    WRONG_ANSWER = "WRONG_ANSWER"
    TIME_LIMIT_EXCEEDED = "TIME_LIMIT_EXCEEDED"
    MEMORY_LIMIT_EXCEEDED = "MEMORY_LIMIT_EXCEEDED"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    SYNTAX_ERROR = "SYNTAX_ERROR"


@dataclass
class SandboxLimits:
    wall_seconds: float = 10.0
    cpu_seconds: float = 10.0
    memory_mb: int = 512
    output_chars: int = 8000


@dataclass
class SandboxResult:
    outcome: Outcome
    passed: bool
    failing_test: str = ""  # the assert/test that failed (or was running when the run was stopped)
    traceback: str = ""  # trimmed; only candidate/test frames, never the runner's
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    tests_passed: int = 0  # test units that ran clean (a string of tests counts as one unit)
    tests_total: int = 0

    def summary(self) -> str:
        """One line for the Manager, the results pane and logs."""
        text = str(self.outcome)
        if self.tests_total:
            text += f" ({self.tests_passed}/{self.tests_total} tests passed)"
        if self.failing_test:
            # Name the test by its first line that is not an import prefix (extract_tests adds those).
            lines = [line.strip() for line in self.failing_test.strip().splitlines() if line.strip()]
            named = [line for line in lines if not line.startswith(("import ", "from "))] or lines
            text += f": {named[0][:200]}"
        if not self.passed and self.traceback:
            last = self.traceback.strip().splitlines()[-1]
            if last not in text:
                text += f" — {last[:200]}"
        return text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["outcome"] = str(self.outcome)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxResult:
        values = dict(data)
        values["outcome"] = Outcome(values["outcome"])
        return cls(**values)




TRACEBACK_CHARS = 3000
GRACE_S = 0.5  # the judge stops itself at wall_seconds; the parent's SIGKILL is the backstop
FILE_BYTES = 64 * 2**20  # per-file write limit: output spam or disk bombs cannot fill the disk
TMP_BYTES = 64 * 2**20  # the sandbox's private /tmp and /dev/shm (memory-backed)
MESSAGE_BYTES = 64 * 2**20  # the largest answer the judge reads from the code's process
OUTPUT_MARK = "\n... [output truncated]"
