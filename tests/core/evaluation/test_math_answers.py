"""Math answers: extraction from solutions, and equivalence by meaning (math-verify), on MATH-500."""

from __future__ import annotations

import json
import re
import threading

import pytest

from core.datasets.catalog import DATA
from core.evaluation import math_answers
from core.evaluation.math_answers import answers_equivalent, extract_answer

MATH500 = DATA / "math500.jsonl"  # the copy shipped in the package


def _rows() -> list[dict[str, str]]:
    with MATH500.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# (a way a solver might write it, the MATH-500 reference answer)
EQUIVALENT = [
    ("0.5", "\\frac{1}{2}"),
    ("\\dfrac{3}{56}", "\\frac{3}{56}"),
    ("\\sqrt{8}", "2\\sqrt{2}"),
    ("\\sqrt{117}", "3\\sqrt{13}"),
    ("11\\sqrt{2}", "11\\sqrt2"),
    ("90", "90^\\circ"),
    ("(3, \\frac{\\pi}{2})", "\\left( 3, \\frac{\\pi}{2} \\right)"),
    ("6-5i", "6 - 5i"),
    ("5", "x=5"),
    ("x = 5", "x=5"),
    ("-2, 1", "1,-2"),
    ("7,5,3", "3, 5, 7"),
    ("\\frac{5}{4}", "1.25"),
    ("\\frac{3}{20}", "0.15"),
    ("\\frac{\\sqrt{3}}{2}\\cdot\\frac{3}{2}", "\\frac{3\\sqrt{3}}{4}"),
    ("x^5 + x - x^4 + x^3 - x^2 - 1", "x^5 - x^4 + x^3 - x^2 + x - 1"),
    ("3x - 6 + x^3", "x^3+3x-6"),
    ("\\frac{\\cos x}{\\sin x}", "\\cot x"),
    ("-\\dfrac{\\pi}{6}", "-\\frac{\\pi}{6}"),
    ("(-\\infty, 3]", "(-\\infty,3]"),
    ("\\text{Evelyn}", "\\text{Evelyn}"),
    ("(6, 31, -1)", "(6,31,-1)"),
    ("\\frac{140}{\\sqrt{2}}", "70 \\sqrt{2}"),
    ("1.0", "1"),
    ("\\frac{28}{2}", "14"),
    ("\\boxed{\\frac{14}{3}}", "\\frac{14}{3}"),
]

NOT_EQUIVALENT = [
    ("\\frac{1}{3}", "0.5"),
    ("\\sqrt{6}", "2\\sqrt{2}"),
    ("[2, 5]", "[2,5)"),
    ("(-\\infty,3)", "(-\\infty,3]"),
    ("6+5i", "6 - 5i"),
    ("p+q", "p - q"),
    ("\\text{Bob}", "\\text{Evelyn}"),
    ("(3, \\pi)", "\\left( 3, \\frac{\\pi}{2} \\right)"),
    ("x^3+3x+6", "x^3+3x-6"),
    ("1,2", "1,-2"),
    ("4.67", "\\frac{14}{3}"),
    ("28", "27"),
    ("51", "\\sqrt{51}"),
    ("(6,-1,31)", "(6,31,-1)"),
    ("3.14", "\\pi"),
    ("", "5"),
    ("5", ""),
]


@pytest.mark.parametrize(("candidate", "reference"), EQUIVALENT)
def test_equivalent_answers(candidate: str, reference: str) -> None:
    assert answers_equivalent(candidate, reference)


@pytest.mark.parametrize(("candidate", "reference"), NOT_EQUIVALENT)
def test_different_answers(candidate: str, reference: str) -> None:
    assert not answers_equivalent(candidate, reference)


def test_table_answers_come_from_math500() -> None:
    references = {row["answer"] for row in _rows()}
    used = {ref for _, ref in EQUIVALENT + NOT_EQUIVALENT if ref}
    assert len(used & references) >= 20


@pytest.mark.parametrize("garbage", ["\\frac{", "}{", "\\sqrt", "$$", "x" * 5000, "\\boxed{", "1/0", "((((("])
def test_bad_input_is_never_equal_and_never_raises(garbage: str) -> None:
    assert answers_equivalent(garbage, "5") is False
    assert answers_equivalent("5", garbage) is False


def test_works_off_the_main_thread() -> None:
    # math-verify's own timeouts use signal.alarm, which raises off the main thread.
    results: list[list[bool]] = []
    pairs = EQUIVALENT[:6] + NOT_EQUIVALENT[:6]
    worker = threading.Thread(target=lambda: results.append([answers_equivalent(c, r) for c, r in pairs]))
    worker.start()
    worker.join(60)
    assert results == [[True] * 6 + [False] * 6]


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("so \\boxed{1} first, then \\boxed{\\frac{1}{\\sqrt{2}}}.", "\\frac{1}{\\sqrt{2}}"),
        ("The set is $\\boxed{\\{1, 2\\}}$.", "\\{1, 2\\}"),
        ("x = \\boxed{3} and then \\boxed{4", "3"),  # a cut-off last box is skipped
        ("Hence $\\boxed 7$.", "7"),
        ("\\fbox{12}", "12"),
        ("The answer is $\\frac{1}{2}$.", "\\frac{1}{2}"),
        ("Answer: 5", "5"),
        ("**Final Answer:** 12 apples. Done.", "12 apples"),
        ("Final answer: \\(x=2\\)", "x=2"),
        ("I think the answer is 3.5. Let me double check.\nYes.", "3.5"),
        ("No conclusion here.", ""),
        ("", ""),
    ],
)
def test_extract_answer(text: str, answer: str) -> None:
    assert extract_answer(text) == answer


def test_extracted_answers_of_math500_solutions_match_the_reference() -> None:
    rows = _rows()
    mismatched = [
        (row["answer"], extract_answer(row["solution"]))
        for row in rows
        if not answers_equivalent(extract_answer(row["solution"]), row["answer"])
    ]
    assert mismatched == []
    # The same value written differently still matches, and a nearby value does not: the checker is
    # comparing meaning, not strings.
    fractions = [(row["answer"], re.fullmatch(r"\\frac\{(\d+)\}\{(\d+)\}", row["answer"])) for row in rows]
    sample = [(answer, int(m.group(1)) / int(m.group(2))) for answer, m in fractions if m][:10]
    assert len(sample) == 10
    for answer, value in sample:
        assert answers_equivalent(extract_answer(f"The answer is ${value:.10f}$."), answer), answer
        assert not answers_equivalent(f"{value + 0.01:.10f}", answer), answer


def test_a_runaway_comparison_gives_up_and_the_checker_keeps_working() -> None:
    # sympy would grind on this power tower inside C code, where no signal can stop it.
    assert answers_equivalent("2^{2^{2^{2^{2^{100}}}}}", "1", timeout_s=1) is False
    assert answers_equivalent("0.5", "\\dfrac12")


def test_the_checker_recovers_when_its_worker_dies() -> None:
    assert answers_equivalent("\\sqrt{8}", "2\\sqrt{2}")
    worker = math_answers._VERIFIER._proc
    assert worker is not None
    worker.kill()
    worker.wait()
    assert answers_equivalent("\\sqrt{8}", "2\\sqrt{2}")
