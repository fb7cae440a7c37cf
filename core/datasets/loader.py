"""Reading a dataset file: its format detected from the first record's fields (or named with ``--format``),
every record built by that format. Every bad line is one DatasetError naming the file, the line and the
fields the format expects."""

from __future__ import annotations

import json
from pathlib import Path

from core.datasets.formats import FORMATS, detect_format, get_format
from core.datasets.problems import Dataset, DatasetError, Problem


def load_dataset(path: Path, fmt: str | None = None) -> Dataset:
    """Read a JSONL file in one of the known formats (detected from the first record, or ``fmt``).
    Raises DatasetError with one line naming the file and line."""
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
    return Dataset(path=path, kind=chosen.name, problems=problems, name=chosen.display)
