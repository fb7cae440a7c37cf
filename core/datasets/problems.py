"""Benchmark problem sets: HumanEval- and MATH-format JSONL files read into problems a run can take.

A leaf: it knows nothing of runs. Each format names the fields it recognises, the domain its problems
belong to and (core.datasets.verdicts) how a final answer is checked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KIND_HUMANEVAL = "humaneval"
KIND_MATH = "math"
_HUMANEVAL_FIELDS = ("task_id", "prompt", "test", "entry_point")
_MATH_FIELDS = ("problem", "answer")


class DatasetError(ValueError):
    """The dataset cannot be used; the message is one line fit to show a user."""


# --- datasets ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    task_id: str
    domain: str  # "code" | "math"
    task: str  # the text the swarm is given
    reference: str = ""  # MATH: the reference answer
    prompt: str = ""  # HumanEval: the function stub with its docstring
    entry_point: str = ""
    test: str = ""  # HumanEval: the hidden tests, `def check(candidate): ...`
    canonical_solution: str = ""


@dataclass(frozen=True)
class Dataset:
    path: Path
    kind: str  # KIND_HUMANEVAL | KIND_MATH
    problems: list[Problem]

    @property
    def name(self) -> str:
        return "HumanEval" if self.kind == KIND_HUMANEVAL else "MATH"

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


def _kind_of(record: dict[str, Any]) -> str | None:
    if all(name in record for name in _HUMANEVAL_FIELDS):
        return KIND_HUMANEVAL
    if all(name in record for name in _MATH_FIELDS):
        return KIND_MATH
    return None


def _problem(record: dict[str, Any], kind: str, index: int, where: str) -> Problem:
    fields = _HUMANEVAL_FIELDS if kind == KIND_HUMANEVAL else _MATH_FIELDS
    for name in fields:
        if not isinstance(record.get(name), str) or not record[name].strip():
            raise DatasetError(f"{where}: field {name!r} must be non-empty text")
    if kind == KIND_HUMANEVAL:
        entry = record["entry_point"].strip()
        if not entry.isidentifier():
            raise DatasetError(f"{where}: entry_point {entry!r} is not a Python name")
        canonical = record.get("canonical_solution")
        return Problem(
            task_id=record["task_id"].strip(),
            domain="code",
            task=humaneval_task(record["prompt"], entry),
            prompt=record["prompt"],
            entry_point=entry,
            test=record["test"],
            canonical_solution=canonical if isinstance(canonical, str) else "",
        )
    task_id = record.get("unique_id") or record.get("task_id") or record.get("id") or f"MATH/{index}"
    return Problem(
        task_id=str(task_id),
        domain="math",
        task=record["problem"].strip(),
        reference=record["answer"].strip(),
    )


def load_dataset(path: Path) -> Dataset:
    """Read a HumanEval- or MATH-format JSONL file. Raises DatasetError with one line."""
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
    kind: str | None = None
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
        this = _kind_of(record)
        if this is None:
            raise DatasetError(
                f"{where}: unknown dataset format (fields {', '.join(sorted(record)[:8]) or 'none'}): expected "
                "HumanEval (task_id, prompt, test, entry_point) or MATH (problem, answer) JSON lines"
            )
        if kind is not None and this != kind:
            raise DatasetError(f"{where}: a {this} record in a {kind} dataset")
        kind = this
        problem = _problem(record, kind, len(problems), where)
        if problem.task_id in seen:
            raise DatasetError(f"{where}: duplicate task id {problem.task_id!r}")
        seen.add(problem.task_id)
        problems.append(problem)
    if kind is None:
        raise DatasetError(f"{path}: the dataset is empty")
    return Dataset(path=path, kind=kind, problems=problems)
