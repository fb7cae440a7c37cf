"""The dataset formats of the seeds' benchmarks: which fields a record has, its domain, its answer check.

HumanEval and MATH-500 ship with the package (core.datasets.catalog); the others load from a local JSONL
file in the format their public releases use. A file's format is the first of FORMATS whose fields its
first record has (or ``--format NAME``), and every later record must have them too.

| format | fields | domain | verdict (core.datasets.verdicts) |
|---|---|---|---|
| humaneval | task_id, prompt, test, entry_point | code | the hidden ``check(entry_point)`` in the sandbox |
| mbpp | text, code, test_list (test_setup_code) | code | the asserts of test_list in the sandbox |
| apps | question, input_output (solutions) | code | each stdin/stdout case in the sandbox, a time limit each |
| mmlu | question, choices, answer (subject) | general | the chosen letter |
| aqua | question, options, correct | math | the chosen letter |
| svamp | Body, Question, Answer | math | numeric equivalence |
| multiarith | question, final_ans | math | numeric equivalence |
| gsm8k | question, answer ("... #### N") | math | numeric equivalence |
| math | problem, answer | math | mathematical equivalence |
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.datasets.problems import DatasetError, Problem, humaneval_task

LETTERS = string.ascii_uppercase


@dataclass(frozen=True)
class Format:
    name: str
    display: str
    fields: tuple[str, ...]  # required: detection and every record
    domain: str
    build: Callable[[dict[str, Any], int, str], Problem]
    source: str = ""  # where the public release is

    def matches(self, record: dict[str, Any]) -> bool:
        return all(name in record for name in self.fields)


def _text(record: dict[str, Any], name: str, where: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}: field {name!r} must be non-empty text")
    return value


def _number_text(record: dict[str, Any], name: str, where: str) -> str:
    """A numeric answer as text (5.0 -> "5"), from a number or a string holding one."""
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DatasetError(f"{where}: field {name!r} must be a number")
    text = str(value).strip().replace(",", "")
    try:
        number = float(text)
    except ValueError:
        raise DatasetError(f"{where}: field {name!r} must be a number, got {str(value)[:40]!r}") from None
    return str(int(number)) if number.is_integer() else text


def _task_id(record: dict[str, Any], prefix: str, index: int) -> str:
    for key in ("task_id", "unique_id", "id", "ID", "problem_id"):
        value = record.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip() if isinstance(value, str) and "/" in value else f"{prefix}/{value}"
    return f"{prefix}/{index}"


def _lettered(question: str, options: list[str]) -> str:
    lines = [f"{LETTERS[i]}) {option}" for i, option in enumerate(options)]
    return f"{question.strip()}\n\n" + "\n".join(lines) + "\n\nAnswer with the letter of the correct choice."


# --- code --------------------------------------------------------------------------------------------


def _humaneval(record: dict[str, Any], index: int, where: str) -> Problem:
    for name in ("task_id", "prompt", "test", "entry_point"):
        _text(record, name, where)
    entry = record["entry_point"].strip()
    if not entry.isidentifier():
        raise DatasetError(f"{where}: entry_point {entry!r} is not a Python name")
    canonical = record.get("canonical_solution")
    canonical = canonical if isinstance(canonical, str) else ""
    return Problem(
        task_id=record["task_id"].strip(), domain="code", task=humaneval_task(record["prompt"], entry),
        prompt=record["prompt"], entry_point=entry, test=record["test"], canonical_solution=canonical,
        kind="humaneval", reference_code=record["prompt"] + canonical if canonical else "",
    )


_ASSERT_CALL = re.compile(r"assert\s+(?:not\s+)?\(?\s*(?:set\(|sorted\(|math\.isclose\()?\s*([A-Za-z_]\w*)\s*\(")


def _mbpp(record: dict[str, Any], index: int, where: str) -> Problem:
    text, code = _text(record, "text", where), _text(record, "code", where)
    tests = record.get("test_list")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t.strip() for t in tests):
        raise DatasetError(f"{where}: field 'test_list' must be a non-empty list of assert statements")
    setup = record.get("test_setup_code") or ""
    if not isinstance(setup, str):
        raise DatasetError(f"{where}: field 'test_setup_code' must be text")
    found = _ASSERT_CALL.search(tests[0])
    entry = found[1] if found else ""
    task = f"{text.strip()}\n\nYour code must pass tests like this one:\n```python\n{tests[0].strip()}\n```"
    return Problem(
        task_id=_task_id(record, "MBPP", index), domain="code", task=task, entry_point=entry, kind="mbpp",
        tests=tuple(t.strip() for t in tests), setup=setup, reference_code=code,
    )


def _io_lookup_program(cases: tuple[tuple[str, str], ...]) -> str:
    """A program that answers exactly the given inputs (the demo oracle, when no solution is given)."""
    table = {inp: out for inp, out in cases}
    return f"import sys\nprint({table!r}.get(sys.stdin.read(), ''), end='')\n"


def _apps(record: dict[str, Any], index: int, where: str) -> Problem:
    question = _text(record, "question", where)
    raw = record.get("input_output")
    try:
        io: Any = json.loads(raw) if isinstance(raw, str) else raw
        inputs, outputs = io["inputs"], io["outputs"]
    except (ValueError, TypeError, KeyError):
        shape = '{"inputs": [...], "outputs": [...]}'
        raise DatasetError(f"{where}: field 'input_output' must hold {shape}") from None
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs) or not inputs:
        raise DatasetError(f"{where}: 'input_output' needs as many inputs as outputs, at least one")

    def join(v: object) -> str:
        return "\n".join(map(str, v)) + "\n" if isinstance(v, list) else str(v)

    cases = tuple((join(i), join(o)) for i, o in zip(inputs, outputs, strict=True))
    solutions = record.get("solutions")
    try:
        listed = json.loads(solutions) if isinstance(solutions, str) else solutions
    except ValueError:
        listed = None
    reference = listed[0] if isinstance(listed, list) and listed and isinstance(listed[0], str) else ""
    task = (f"{question.strip()}\n\nWrite a complete Python program that reads the input from standard input "
            "and writes the answer to standard output.")
    return Problem(
        task_id=_task_id(record, "APPS", index), domain="code", task=task, kind="apps", io_cases=cases,
        reference_code=reference or _io_lookup_program(cases),
    )


# --- choices -----------------------------------------------------------------------------------------


def _mmlu(record: dict[str, Any], index: int, where: str) -> Problem:
    question = _text(record, "question", where)
    choices = record.get("choices")
    if not isinstance(choices, list) or len(choices) < 2 or not all(isinstance(c, str) for c in choices):
        raise DatasetError(f"{where}: field 'choices' must be a list of at least two texts")
    answer = record.get("answer")
    if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(choices):
        letter = LETTERS[answer]
    elif isinstance(answer, str) and answer.strip().upper() in LETTERS[: len(choices)] and answer.strip():
        letter = answer.strip().upper()
    else:
        raise DatasetError(f"{where}: field 'answer' must be a choice index (0..{len(choices) - 1}) or a letter")
    subject = record.get("subject")
    return Problem(
        task_id=_task_id(record, "MMLU", index), domain="general", task=_lettered(question, choices),
        reference=letter, kind="mmlu", choices=tuple(choices),
        extra={"subject": subject} if isinstance(subject, str) else {},
    )


_OPTION = re.compile(r"^\s*\(?([A-Z])\s*[).:]\s*(.*)$", re.S)


def _aqua(record: dict[str, Any], index: int, where: str) -> Problem:
    question = _text(record, "question", where)
    options = record.get("options")
    if not isinstance(options, list) or len(options) < 2 or not all(isinstance(o, str) for o in options):
        raise DatasetError(f"{where}: field 'options' must be a list of texts like \"A)12\"")
    parsed = [_OPTION.match(o) for o in options]
    if not all(parsed):
        raise DatasetError(f"{where}: each option must start with its letter, like \"A)12\"")
    correct = _text(record, "correct", where).strip().upper()
    letters = [m[1] for m in parsed if m]
    if correct not in letters:
        raise DatasetError(f"{where}: field 'correct' must be one of the options' letters ({', '.join(letters)})")
    return Problem(
        task_id=_task_id(record, "AQuA", index), domain="math",
        task=_lettered(question, [m[2].strip() for m in parsed if m]), reference=correct, kind="aqua",
        choices=tuple(m[2].strip() for m in parsed if m),
    )


# --- numbers and expressions -------------------------------------------------------------------------


def _gsm8k(record: dict[str, Any], index: int, where: str) -> Problem:
    question, answer = _text(record, "question", where), _text(record, "answer", where)
    final = answer.strip().splitlines()[-1]
    if not final.startswith("####"):
        raise DatasetError(f"{where}: field 'answer' must end with a line '#### N' (GSM8K's final answer)")
    reference = _number_text({"n": final.removeprefix("####").strip()}, "n", where)
    return Problem(task_id=_task_id(record, "GSM8K", index), domain="math", task=question.strip(),
                   reference=reference, kind="gsm8k")


def _svamp(record: dict[str, Any], index: int, where: str) -> Problem:
    body, question = _text(record, "Body", where), _text(record, "Question", where)
    return Problem(task_id=_task_id(record, "SVAMP", index), domain="math",
                   task=f"{body.strip()} {question.strip()}", reference=_number_text(record, "Answer", where),
                   kind="svamp")


def _multiarith(record: dict[str, Any], index: int, where: str) -> Problem:
    return Problem(task_id=_task_id(record, "MultiArith", index), domain="math",
                   task=_text(record, "question", where).strip(),
                   reference=_number_text(record, "final_ans", where), kind="multiarith")


def _math(record: dict[str, Any], index: int, where: str) -> Problem:
    return Problem(task_id=_task_id(record, "MATH", index), domain="math",
                   task=_text(record, "problem", where).strip(), reference=_text(record, "answer", where).strip(),
                   kind="math")


# Most specific first: detection takes the first whose fields a record has.
FORMATS: tuple[Format, ...] = (
    Format("humaneval", "HumanEval", ("task_id", "prompt", "test", "entry_point"), "code", _humaneval,
           "github openai/human-eval"),
    Format("mbpp", "MBPP", ("text", "code", "test_list"), "code", _mbpp, "github google-research/mbpp"),
    Format("apps", "APPS", ("question", "input_output"), "code", _apps,
           "APPS (hendrycks/apps) or LiveCodeBench in its stdin/stdout form"),
    Format("mmlu", "MMLU", ("question", "choices", "answer"), "general", _mmlu, "cais/mmlu"),
    Format("aqua", "AQuA", ("question", "options", "correct"), "math", _aqua, "deepmind/aqua_rat"),
    Format("svamp", "SVAMP", ("Body", "Question", "Answer"), "math", _svamp, "arkilpatel/SVAMP"),
    Format("multiarith", "MultiArith", ("question", "final_ans"), "math", _multiarith, "ChilleD/MultiArith"),
    Format("gsm8k", "GSM8K", ("question", "answer"), "math", _gsm8k, "openai/gsm8k"),
    Format("math", "MATH", ("problem", "answer"), "math", _math, "hendrycks MATH; MATH-500"),
)
FORMAT_NAMES = tuple(f.name for f in FORMATS)


def get_format(name: str) -> Format:
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise DatasetError(f"unknown dataset format {name!r}: choose one of {', '.join(FORMAT_NAMES)}")


def detect_format(record: dict[str, Any], where: str) -> Format:
    for fmt in FORMATS:
        if fmt.matches(record):
            return fmt
    expected = "; ".join(f"{f.display} ({', '.join(f.fields)})" for f in FORMATS)
    fields = ", ".join(sorted(record)[:8]) or "none"
    raise DatasetError(f"{where}: unknown dataset format (fields {fields}): expected one of {expected}")
