"""Honest final answers: a run's answer comes only from a model's reply that passes the domain's answer
check, never from text the app wrote (its prompts, re-asks and notes, or a model's echo of them).

* code: Python that parses (in a fenced block or as the whole reply);
* math: a final answer (the extracted expression, or a reply that is itself one short expression);
* general: any text of the model's own.
Anything else ends the run with an empty answer and ``answer_source: "none"``; the screen and the headless
output then say "no answer", never a made-up one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from typing import Protocol

from core.evaluation.extract import latest_code
from core.evaluation.math_answers import answer_or_text, extract_answer

SOURCE_NONE = "none"
# Phrases only the app writes (its re-asks and markers): an answer holding one is an echo, not an answer.
APP_PHRASES = (
    "Your previous reply could not be used",
    "Reply again with ONLY",
    "[NO_YAML_FOUND]",
    "### swarm-tui call",
)


class AgentOutput(Protocol):
    """An agent's latest output as the engine keeps it (core.runtime.engine.AgentResult)."""

    agent: str
    public: str
    answer: str


def latest_answer(domain: str, answer_role: str, latest: Mapping[str, AgentOutput]) -> tuple[str, str]:
    """(answer, source) when the Manager gave none: the answer role's latest output, or else the last agent's
    with any output; code as its fenced block, math as its extracted answer. ("", "") when nobody wrote any."""
    result = latest.get(answer_role)
    if result is None:
        candidates = [r for r in latest.values() if r.public]
        if not candidates:
            return "", ""
        result = candidates[-1]
    if domain == "code":
        code = latest_code([result.public])
        if code:
            return f"```python\n{code}\n```", f"extracted:{result.agent}"
    if domain == "math":
        answer = result.answer or extract_answer(result.public)
        if answer:
            return answer, f"extracted:{result.agent}"
    return result.public, f"extracted:{result.agent}"


_EXPRESSION_MAX_CHARS = 80  # a bare math answer longer than this (or over several lines) is prose, not one
_MATHY = re.compile(r"[0-9\\=+\-*/^()]")  # a digit, an operator or LaTeX: an expression, not a sentence
_ECHO_MIN_CHARS = 40  # shorter answers (a number, a letter) appear in prompts by chance
_SPACE = re.compile(r"\s+")


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def app_written(answer: str, app_texts: Iterable[str]) -> bool:
    """Whether the answer is text the app wrote: one of its own phrases, or (40+ characters) a copy of part
    of an app-authored text it sent (a system prompt, a re-ask)."""
    if any(phrase in answer for phrase in APP_PHRASES):
        return True
    normal = _normal(answer)
    if len(normal) < _ECHO_MIN_CHARS:
        return False
    return any(normal in _normal(text) for text in app_texts)


def passes_answer_check(answer: str, domain: str) -> bool:
    if not answer.strip():
        return False
    if domain == "code":
        code = latest_code([answer])
        if not code:
            return False
        try:
            ast.parse(code)
        except (SyntaxError, ValueError):
            return False
        return True
    if domain == "math":  # an extracted final answer, or a reply that is itself one short expression
        if extract_answer(answer):
            return True
        text = answer_or_text(answer).strip()
        return (bool(text) and len(text) <= _EXPRESSION_MAX_CHARS and "\n" not in text
                and len(text.split()) <= 8 and (bool(_MATHY.search(text)) or len(text) <= 3))  # or a choice: "B"
    return True


def honest_answer(answer: str, source: str, domain: str, app_texts: Iterable[str]) -> tuple[str, str, str]:
    """(answer, source, why it was refused or "")."""
    if not answer.strip():
        return "", SOURCE_NONE, ""
    if app_written(answer, app_texts):
        return "", SOURCE_NONE, "the final answer was text the app wrote (a prompt, re-ask or note), not the model's"
    if not passes_answer_check(answer, domain):
        what = {"code": "Python code that parses", "math": "final expression"}.get(domain, "answer")
        return "", SOURCE_NONE, f"the final answer held no {what}"
    return answer, source, ""
