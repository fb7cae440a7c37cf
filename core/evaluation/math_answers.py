"""Final answers of math problems: pull them out of text, and compare them by meaning.

Equivalence uses math-verify (LaTeX -> sympy, then numeric/symbolic/set comparison), never string
equality: ``\\frac{1}{2}``, ``0.5`` and ``\\dfrac12`` are the same answer.

math-verify bounds its own work with ``signal.alarm``, which only works on the main thread. On the main
thread we use it; elsewhere (Textual workers, thread pools) its timeouts are switched off and the call
runs in a daemon helper thread that the caller waits on with a deadline instead, so a pathological
expression can never hang the caller.
"""

from __future__ import annotations

import logging
import re
import threading

from math_verify import parse, verify

TIMEOUT_S = 5
MAX_ANSWER_CHARS = 1000  # longer "answers" are prose; comparing them symbolically only costs time

# math-verify logs a warning when timeouts are off and debug tracebacks on unparsable input; with no
# logging configured those would land on stderr, i.e. across the TUI.
logging.getLogger("math_verify").addHandler(logging.NullHandler())

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*")
_ANSWER_IS = re.compile(
    r"(?:final\s+answer|answer)\s*(?:is|:|=)\s*:?\s*(?P<rest>[^\n]+)",
    re.IGNORECASE,
)
_MATH_SPAN = re.compile(r"^\$\$?(?P<m>.+?)\$\$?|^\\\((?P<p>.+?)\\\)|^\\\[(?P<b>.+?)\\\]")


def _balanced(text: str, start: int) -> str | None:
    """Content of the brace group opening at ``text[start]`` (nested braces allowed), or None."""
    depth = 0
    for i in range(start, len(text)):
        char = text[i]
        if char == "\\":
            continue
        if char == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif char == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
    return None


def _last_boxed(text: str) -> str | None:
    for match in reversed(list(_BOXED.finditer(text))):
        end = match.end()
        if end < len(text) and text[end] == "{":
            content = _balanced(text, end)
            if content is not None:
                return content.strip()
        elif end < len(text) and text[end - 1].isspace():
            # `\boxed 5`: the argument runs to the next space or math delimiter.
            token = re.match(r"[^\s$]+", text[end:])
            if token:
                return token.group(0)
    return None


def _clean(answer: str) -> str:
    answer = answer.strip().strip("*").strip()
    span = _MATH_SPAN.match(answer)
    if span:
        answer = next(g for g in span.groups() if g is not None)
    else:
        answer = re.split(r"\.\s|\.$", answer, maxsplit=1)[0]
    return answer.strip().strip("$").strip().rstrip(".").strip()


def extract_answer(text: str) -> str:
    """The final answer in ``text``: the last ``\\boxed{...}``, else the last "answer is X" /
    "Answer: X", else ``""``."""
    if not text:
        return ""
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed
    matches = list(_ANSWER_IS.finditer(text))
    if matches:
        return _clean(matches[-1].group("rest"))
    return ""


def _normalized(answer: str) -> str:
    """Cheap spelling normalisation, so identical answers never reach sympy."""
    text = answer.strip().strip("$")
    for old, new in (("\\dfrac", "\\frac"), ("\\tfrac", "\\frac"), ("\\left", ""), ("\\right", ""),
                     ("\\!", ""), ("\\,", ""), ("\\;", ""), ("\\ ", ""), ("^\\circ", ""), ("^{\\circ}", "")):
        text = text.replace(old, new)
    return re.sub(r"\s+", "", text).rstrip(".")


def _as_latex(answer: str) -> str:
    if "\\boxed" in answer or "\\fbox" in answer:
        answer = _last_boxed(answer) or answer
    return f"${answer.strip().strip('$')}$"


def _compare(candidate: str, reference: str, timeout: int | None) -> bool:
    gold = parse(_as_latex(reference), parsing_timeout=timeout)
    target = parse(_as_latex(candidate), parsing_timeout=timeout)
    if not gold or not target:
        return False
    return bool(verify(gold, target, timeout_seconds=timeout))


def answers_equivalent(candidate: str, reference: str, timeout_s: int = TIMEOUT_S) -> bool:
    """True when ``candidate`` and ``reference`` are the same mathematical answer. Never raises.

    Both are answer strings (LaTeX or plain); a ``\\boxed{}`` inside either is unwrapped first. Gives
    up (False) after about ``timeout_s`` seconds.
    """
    try:
        if not candidate or not reference or not candidate.strip() or not reference.strip():
            return False
        if _normalized(candidate) == _normalized(reference):
            return True
        if len(candidate) > MAX_ANSWER_CHARS or len(reference) > MAX_ANSWER_CHARS:
            return False
        if threading.current_thread() is threading.main_thread():
            return _compare(candidate, reference, timeout_s)
        return _compare_in_helper(candidate, reference, timeout_s)
    except Exception:  # math-verify or sympy failing on odd input means "not shown equal"
        return False


def _compare_in_helper(candidate: str, reference: str, timeout_s: int) -> bool:
    """Off the main thread: no signals; wait on a daemon thread with a deadline instead."""
    outcome: list[bool] = []

    def work() -> None:
        try:
            outcome.append(_compare(candidate, reference, None))
        except Exception:
            outcome.append(False)

    helper = threading.Thread(target=work, name="math-verify", daemon=True)
    helper.start()
    helper.join(timeout_s * 3)  # parse + parse + verify, each of which has timeout_s on the main thread
    return bool(outcome and outcome[0])
