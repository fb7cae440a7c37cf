"""Benchmark problem sets: JSONL files in the seeds' formats, read into problems a run can take.

A leaf: it knows nothing of runs. ``core.datasets.formats`` says which fields each format has, its domain
and how its answer is checked (``core.datasets.verdicts``); the format of a file is detected from its first
record's fields, or named (``--format``). Every bad line is one DatasetError naming the file, the line and
the fields the format expects.
"""

from __future__ import annotations

import json
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

    @property
    def name(self) -> str:
        from core.datasets.formats import get_format

        return get_format(self.kind).display

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


def load_dataset(path: Path, fmt: str | None = None) -> Dataset:
    """Read a JSONL file in one of the known formats (detected from the first record, or ``fmt``).
    Raises DatasetError with one line naming the file and line."""
    from core.datasets.formats import FORMATS, detect_format, get_format

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: is a directory, not a dataset file") from None
    except UnicodeDecodeError:
        raise DatasetError(f"{path}: not a text file (invalid UTF-8)") from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    chosen = get_format(fmt) if fmt else None
    problems: list[Problem] = []
    seen: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise DatasetError(f"{where}: not a JSON line ({exc})") from None
        if not isinstance(record, dict):
            raise DatasetError(f"{where}: each line must be a JSON object")
        if chosen is None:
            chosen = detect_format(record, where)
        elif not chosen.matches(record):
            other = next((f.name for f in FORMATS if f.matches(record)), "")
            if other:
                raise DatasetError(f"{where}: a {other} record in a {chosen.name} dataset")
            missing = ", ".join(name for name in chosen.fields if name not in record)
            raise DatasetError(f"{where}: missing field(s) {missing} (a {chosen.display} record has "
                               f"{', '.join(chosen.fields)})")
        problem = chosen.build(record, len(problems), where)
        if problem.task_id in seen:
            raise DatasetError(f"{where}: duplicate task id {problem.task_id!r}")
        seen.add(problem.task_id)
        problems.append(problem)
    if chosen is None:
        raise DatasetError(f"{path}: the dataset is empty")
    return Dataset(path=path, kind=chosen.name, problems=problems)
