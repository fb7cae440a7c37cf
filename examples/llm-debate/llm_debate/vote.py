"""The debate's final answer (Du et al., arXiv 2305.14325, §2: after the last round the agents' answers are
aggregated by majority). Math answers vote together when they are equivalent (the app's math-answer
check); code by its extracted code, other answers by their text. A tie goes to the lowest-numbered debater."""

from __future__ import annotations

import re
from collections.abc import Mapping

from core.evaluation.extract import latest_code
from core.evaluation.math_answers import answers_equivalent, extract_answer


def candidate(domain: str, text: str) -> str:
    """What a debater's reply answers: its code (fenced), its math answer, or its text."""
    if domain == "code":
        code = latest_code([text])
        return f"```python\n{code}\n```" if code else ""
    if domain == "math":
        return extract_answer(text)
    return text.strip()


def _same(domain: str, a: str, b: str) -> bool:
    if domain == "math":
        return answers_equivalent(a, b)
    return re.sub(r"\s+", " ", a).strip().lower() == re.sub(r"\s+", " ", b).strip().lower()


def majority(domain: str, replies: Mapping[str, str]) -> tuple[str, str, str]:
    """(answer, who gave it first, "k/n agree") over the debaters' last replies; ("", "", "...") when none
    answered."""
    answers = {name: candidate(domain, text) for name, text in replies.items()}
    answers = {name: a for name, a in answers.items() if a}
    if not answers:
        return "", "", f"0/{len(replies)} answered"
    groups: list[list[str]] = []
    for name, answer in answers.items():
        group = next((g for g in groups if _same(domain, answers[g[0]], answer)), None)
        if group is None:
            groups.append([name])
        else:
            group.append(name)
    best = max(groups, key=len)  # max keeps the first of equal groups: the lowest-numbered debater's
    return answers[best[0]], best[0], f"{len(best)}/{len(replies)} agree"
