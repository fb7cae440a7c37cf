"""Benchmark problem sets: JSONL files in the seeds' formats, read into problems a run can take.

A leaf: it knows nothing of runs. ``core.datasets.formats`` says which fields each format has, its domain
and how its answer is checked (``core.datasets.verdicts``); ``core.datasets.loader`` reads a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


class DatasetError(ValueError):
    """The dataset cannot be used; the message is one line fit to show a user."""


@dataclass(frozen=True)
class Problem:
    task_id: str
    domain: str  # "code" | "math" | "general"
    task: str  # the text the swarm is given
    reference: str = ""  # the reference answer (math: an expression; choices: a letter)
    prompt: str = ""  # HumanEval: the function stub with its docstring
    entry_point: str = ""
    test: str = ""  # HumanEval: the hidden tests, `def check(candidate): ...`
    canonical_solution: str = ""
    kind: str = "humaneval"  # the format it came from (core.datasets.formats), which decides the verdict
    choices: tuple[str, ...] = ()  # multiple choice: the options, in letter order
    tests: tuple[str, ...] = ()  # MBPP: assert statements
    setup: str = ""  # MBPP: test_setup_code
    io_cases: tuple[tuple[str, str], ...] = ()  # stdin/stdout problems: (input, expected output)
    reference_code: str = ""  # a program that solves it (the demo oracle writes it)
    extra: dict[str, str] = field(default_factory=dict, compare=False)  # e.g. an MMLU subject


@dataclass(frozen=True)
class Dataset:
    path: Path
    kind: str  # the format's name (core.datasets.formats.FORMATS)
    problems: list[Problem]
    name: str = ""  # the format's display name (HumanEval, GSM8K, ...)

    def select(self, offset: int = 0, limit: int | None = None) -> list[Problem]:
        end = None if limit is None else offset + limit
        return self.problems[offset:end]


def humaneval_task(prompt: str, entry_point: str) -> str:
    """The task text for a HumanEval problem: the stub verbatim, so its docstring examples (the
    visible tests code execution uses) stay intact."""
    return (
        f"Complete the Python function `{entry_point}` below. Keep its signature; give the full function "
        f"definition with the imports and helpers it needs.\n\n```python\n{prompt.rstrip()}\n\n```"
    )
