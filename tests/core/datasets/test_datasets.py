"""Datasets by name and by format: the shipped HumanEval and MATH-500, the seeds' other formats from local
JSONL files, one clear line for a bad file, a demo oracle that solves every format, and verdicts that
generated code cannot forge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.datasets.catalog import SHIPPED, listing, resolve
from core.datasets.formats import FORMAT_NAMES
from core.datasets.hub import load_hub
from core.datasets.loader import load_dataset
from core.datasets.problems import DatasetError, Problem
from core.datasets.verdicts import REJECTED_NON_DATA, chosen_letter, score
from core.demo.bench_script import oracle_final
from tui.entry import main

RECORDS: dict[str, list[dict[str, Any]]] = {
    "gsm8k": [{"question": "Tom has 3 apples and buys 4 more. How many?", "answer": "3 + 4 = 7\n#### 7"},
              {"question": "12 eggs a box; eggs in 3 boxes?", "answer": "12 * 3\n#### 1,036"}],
    "mmlu": [{"question": "Capital of France?", "choices": ["Berlin", "Paris", "Rome"], "answer": 1,
              "subject": "geography"},
             {"question": "2 + 2 = ?", "choices": ["3", "5", "4"], "answer": "c"}],
    "aqua": [{"question": "60 km in 1.5 h: speed?", "options": ["A)30", "B)40", "C)45"], "correct": "B"}],
    "svamp": [{"ID": "chal-1", "Body": "Jack had 8 pens and Mary had 5.", "Question": "How many in all?",
               "Answer": 13.0}],
    "multiarith": [{"question": "5 birds and 3 more arrive. How many?", "final_ans": "8"}],
    "mbpp": [{"task_id": 2, "text": "Find the shared elements of two lists.",
              "code": "def similar_elements(a, b):\n    return tuple(set(a) & set(b))",
              "test_list": ["assert set(similar_elements((3, 4, 5, 6), (5, 7, 4, 10))) == set((4, 5))",
                            "assert set(similar_elements((1, 2, 3, 4), (5, 4, 3, 7))) == set((3, 4))"],
              "test_setup_code": ""}],
    "apps": [{"problem_id": 7, "question": "Read a and b; print a + b.",
              "input_output": json.dumps({"inputs": ["1 2\n", "10 20\n"], "outputs": ["3\n", "30\n"]}),
              "solutions": json.dumps(["a, b = map(int, input().split())\nprint(a + b)"])},
             {"problem_id": 8, "question": "Print the line reversed.",
              "input_output": {"inputs": ["abc\n"], "outputs": ["cba\n"]}}],
    "math": [{"problem": "What is $1/2 + 1/3$?", "answer": "\\frac{5}{6}"}],
}


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", sorted(RECORDS))
def test_each_format_is_detected_by_its_fields(tmp_path: Path, fmt: str) -> None:
    dataset = load_dataset(_write(tmp_path / f"{fmt}.jsonl", RECORDS[fmt]))
    assert dataset.kind == fmt and len(dataset.problems) == len(RECORDS[fmt])
    assert all(p.kind == fmt and p.task for p in dataset.problems)


def test_what_each_format_carries(tmp_path: Path) -> None:
    load = lambda fmt: load_dataset(_write(tmp_path / f"{fmt}.jsonl", RECORDS[fmt])).problems  # noqa: E731
    assert [p.reference for p in load("gsm8k")] == ["7", "1036"]
    mmlu = load("mmlu")
    assert [p.reference for p in mmlu] == ["B", "C"] and "B) Paris" in mmlu[0].task and mmlu[0].domain == "general"
    assert mmlu[0].extra == {"subject": "geography"}
    (aqua,) = load("aqua")
    assert aqua.reference == "B" and aqua.choices == ("30", "40", "45") and aqua.domain == "math"
    assert load("svamp")[0].reference == "13" and "Jack had 8 pens" in load("svamp")[0].task
    (mbpp,) = load("mbpp")
    assert mbpp.entry_point == "similar_elements" and len(mbpp.tests) == 2 and mbpp.tests[0] in mbpp.task
    apps = load("apps")
    assert apps[0].io_cases == (("1 2\n", "3\n"), ("10 20\n", "30\n")) and "input()" in apps[0].reference_code
    assert apps[1].reference_code  # no solution given: the oracle's table of the cases


@pytest.mark.parametrize(
    ("fmt", "record", "message"),
    [
        ("gsm8k", {"question": "q", "answer": "7"}, "must end with a line '#### N'"),
        ("mmlu", {"question": "q", "choices": ["a", "b"], "answer": 5}, "field 'answer' must be a choice index"),
        ("aqua", {"question": "q", "options": ["30", "40"], "correct": "A"}, "must start with its letter"),
        ("svamp", {"Body": "b", "Question": "q", "Answer": "many"}, "field 'Answer' must be a number"),
        ("mbpp", {"text": "t", "code": "c", "test_list": []}, "field 'test_list' must be a non-empty list"),
        ("apps", {"question": "q", "input_output": "{not json"}, "field 'input_output' must hold"),
    ],
)
def test_a_bad_line_names_the_file_the_line_and_the_fields(
    tmp_path: Path, fmt: str, record: dict[str, Any], message: str
) -> None:
    good = RECORDS[fmt][0]
    path = _write(tmp_path / "d.jsonl", [good, record])
    with pytest.raises(DatasetError) as info:
        load_dataset(path, fmt)
    assert str(info.value).startswith(f"{path}:2: ") and message in str(info.value)


def test_an_unknown_format_or_a_broken_line_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"d\.jsonl:1: unknown dataset format \(fields x, y\): expected one of"):
        load_dataset(_write(tmp_path / "d.jsonl", [{"x": 1, "y": 2}]))
    (tmp_path / "e.jsonl").write_text('{"problem": "p", "answer": "1"}\n{oops\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"e\.jsonl:2: not a JSON line"):
        load_dataset(tmp_path / "e.jsonl")
    with pytest.raises(DatasetError, match="unknown dataset format 'csv'"):
        load_dataset(tmp_path / "e.jsonl", "csv")


def test_the_shipped_datasets_load_by_name_from_any_folder(capsys: pytest.CaptureFixture[str]) -> None:
    for shipped in SHIPPED:
        dataset = load_dataset(resolve(shipped.name))
        assert len(dataset.problems) == shipped.rows and dataset.kind == shipped.format
    assert resolve("./local.jsonl") == Path("./local.jsonl")
    assert main(["bench", "--list"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == listing().strip()
    assert "humaneval   164 problems" in out and "math500     500 problems" in out
    assert all(name in out for name in FORMAT_NAMES)


def test_hub_names_need_the_extra_and_say_so_in_one_line() -> None:
    with pytest.raises(DatasetError, match=r"needs the optional hub extra: pip install 'swarm-tui\[hub\]'"):
        load_hub("hf:openai/gsm8k")
    with pytest.raises(DatasetError, match="is not a dataset name"):
        load_hub("hf:../../etc")


def _problems(tmp_path: Path) -> list[Problem]:
    out = [p for fmt in RECORDS for p in load_dataset(_write(tmp_path / f"{fmt}.jsonl", RECORDS[fmt])).problems]
    return out + load_dataset(resolve("humaneval")).problems[:3] + load_dataset(resolve("math500")).problems[:3]


async def test_the_demo_oracle_solves_every_format_and_its_wrong_mode_fails(tmp_path: Path) -> None:
    for problem in _problems(tmp_path):
        right = await score(problem, oracle_final(problem, True))
        wrong = await score(problem, oracle_final(problem, False))
        assert right.correct, (problem.task_id, right.detail)
        assert not wrong.correct, (problem.task_id, wrong.detail)


@pytest.mark.parametrize("fmt", sorted(RECORDS))
def test_bench_demo_scores_every_format_at_100_percent(tmp_path: Path, fmt: str) -> None:
    path = _write(tmp_path / f"{fmt}.jsonl", RECORDS[fmt])
    out = tmp_path / "out"
    assert main(["bench", str(path), "--demo", "--strategy", "single,dytopo", "--out", str(out)]) == 0
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert [s["accuracy"] for s in summary] == [1.0, 1.0]


def test_a_choice_letter_is_read_from_the_usual_phrasings() -> None:
    for text, letter in (("Answer: C", "C"), ("The answer is (B).", "B"), ("\\boxed{A}", "A"),
                         ('{"answer": "B"}', "B"), ("D) because ...", "D"), ("I cannot tell", "")):
        assert chosen_letter(text, 4) == letter, text


# --- verdicts that cannot be forged --------------------------------------------------------------------

PROXY = '''
class Zero:
    def __sub__(self, other): return self
    def __rsub__(self, other): return self
    def __abs__(self): return 0
    def __eq__(self, other): return True
    def __float__(self): return 0.5

def truncate_number(number):
    return Zero()
'''

POLY = '''
def poly(xs, x):
    return 0

def find_zero(xs):
    return 0.0
'''


def _humaneval(task_id: str) -> Problem:
    return next(p for p in load_dataset(resolve("humaneval")).problems if p.task_id == task_id)


async def test_a_proxy_return_value_cannot_pass_a_numeric_test() -> None:
    verdict = await score(_humaneval("HumanEval/2"), f"```python\n{PROXY}\n```")
    assert not verdict.correct and verdict.rejected == REJECTED_NON_DATA
    assert "returned a non-data object (Remote" in verdict.detail or "non-data object" in verdict.detail


async def test_redefining_a_helper_the_tests_call_changes_nothing() -> None:
    problem = _humaneval("HumanEval/32")
    forged = await score(problem, f"```python\n{POLY}\n```")
    assert not forged.correct
    honest = await score(problem, f"```python\n{problem.prompt}{problem.canonical_solution}\n```")
    assert honest.correct, honest.detail


def test_the_report_counts_rejected_verdicts(tmp_path: Path) -> None:
    from core.bench.report import build_report, load_folder, render_markdown
    from core.bench.runner import Row

    out = tmp_path / "bench"
    out.mkdir()
    rows = [Row("HumanEval/2", "dytopo", "code", False, 1, 10, 5, 0.1, "manager", rejected=REJECTED_NON_DATA),
            Row("HumanEval/3", "dytopo", "code", True, 1, 10, 5, 0.1, "manager")]
    (out / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows), encoding="utf-8")
    text = render_markdown(build_report([load_folder(out)]))
    assert "## Rejected verdicts" in text and "- dytopo: 1 run(s) returned something other than plain data" in text
