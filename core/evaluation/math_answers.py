"""Final answers of math problems: pull them out of text, and compare them by meaning.

Equivalence uses math-verify (LaTeX -> sympy, then numeric/symbolic/set comparison), never string
equality: ``\\frac{1}{2}``, ``0.5`` and ``\\dfrac12`` are the same answer.

math-verify bounds its own work with ``signal.alarm``, which only works on a process's main thread,
and cannot interrupt sympy inside C code (a huge power). So comparisons run in one long-lived worker
process, on its main thread with math-verify's timeouts on, and the caller (any thread) waits with a
deadline; a worker that overruns is killed and replaced. Nothing math-verify logs reaches our stderr.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import select
import subprocess
import sys
import threading
import time

TIMEOUT_S = 5
MAX_ANSWER_CHARS = 1000  # longer "answers" are prose; comparing them symbolically only costs time

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
    if span:  # "$x=2$ because ..." -> the math span
        return next(g for g in span.groups() if g is not None).strip()
    answer = re.split(r"\.\s|\.$", answer, maxsplit=1)[0]  # "3.5. Let me check" -> "3.5"
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


def answer_or_text(text: str) -> str:
    """The answer to check: the one the text names, else the whole text (a bare "14/3")."""
    return extract_answer(text) or text.strip()


def _normalized(answer: str) -> str:
    """Cheap spelling normalisation, so identical answers never reach sympy."""
    text = answer.strip().strip("$")
    for old, new in (
        ("\\dfrac", "\\frac"),
        ("\\tfrac", "\\frac"),
        ("\\left", ""),
        ("\\right", ""),
        ("\\!", ""),
        ("\\,", ""),
        ("\\;", ""),
        ("\\ ", ""),
        ("^\\circ", ""),
        ("^{\\circ}", ""),
    ):
        text = text.replace(old, new)
    return re.sub(r"\s+", "", text).rstrip(".")


def _as_latex(answer: str) -> str:
    if "\\boxed" in answer or "\\fbox" in answer:
        answer = _last_boxed(answer) or answer
    return f"${answer.strip().strip('$')}$"


def answers_equivalent(candidate: str, reference: str, timeout_s: int = TIMEOUT_S) -> bool:
    """True when ``candidate`` and ``reference`` are the same mathematical answer. Never raises.

    Both are answer strings (LaTeX or plain); a ``\\boxed{}`` inside either is unwrapped first.
    Gives up (False) after about ``3 * timeout_s`` seconds. Blocking and thread-safe; from an event
    loop call it through ``asyncio.to_thread``.
    """
    try:
        if not candidate or not reference or not candidate.strip() or not reference.strip():
            return False
        if _normalized(candidate) == _normalized(reference):
            return True
        if len(candidate) > MAX_ANSWER_CHARS or len(reference) > MAX_ANSWER_CHARS:
            return False
        return _VERIFIER.compare(_as_latex(candidate), _as_latex(reference), timeout_s)
    except Exception:  # a broken checker means "not shown equal", never a crash
        return False


# The worker runs math-verify on its own main thread (so its signal.alarm timeouts work) in its own
# process (so sympy stuck inside C code, e.g. a huge power, can be killed, and can't eat our memory).
_WORKER = r"""
import json, logging, os, resource, sys
out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # stray prints from libraries must not corrupt the protocol
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))
logging.disable(logging.CRITICAL)
from math_verify import parse, verify

def compare(candidate, reference, timeout):
    gold = parse(reference, parsing_timeout=timeout)
    target = parse(candidate, parsing_timeout=timeout)
    return bool(gold and target and verify(gold, target, timeout_seconds=timeout))

out.write('{"ready": true}\n')
out.flush()
for line in sys.stdin:
    try:
        req = json.loads(line)
        ok = compare(req["c"], req["r"], req["t"])
    except BaseException:
        ok = False
    out.write(json.dumps({"ok": ok}) + "\n")
    out.flush()
"""

_STARTUP_S = 120.0  # importing sympy on a loaded machine


class _Verifier:
    """One long-lived math-verify worker process, restarted when it dies or overruns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""

    def compare(self, candidate: str, reference: str, timeout_s: int) -> bool:
        request = json.dumps({"c": candidate, "r": reference, "t": max(1, int(timeout_s))}) + "\n"
        with self._lock:
            for _attempt in range(2):  # a dead worker is restarted once
                try:
                    proc = self._ensure()
                    assert proc.stdin is not None
                    proc.stdin.write(request.encode())
                    proc.stdin.flush()
                    reply = self._read_line(proc, time.monotonic() + 3 * max(1, timeout_s) + 1)
                except TimeoutError:
                    self._stop()
                    return False
                except (OSError, ValueError, EOFError):
                    self._stop()
                    continue
                return bool(reply.get("ok"))
        return False

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._stop()
        env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": os.environ.get("LANG", "C.UTF-8")}
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # a Ctrl-C in the terminal is for the app, not for this worker
        )
        if not self._read_line(self._proc, time.monotonic() + _STARTUP_S).get("ready"):
            raise OSError("math-verify worker did not start")
        return self._proc

    def _read_line(self, proc: subprocess.Popen[bytes], deadline: float) -> dict[str, object]:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise EOFError("math-verify worker exited")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        reply = json.loads(line)
        if not isinstance(reply, dict):
            raise ValueError("bad reply")
        return reply

    def _stop(self) -> None:
        proc, self._proc, self._buffer = self._proc, None, b""
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def close(self) -> None:
        with self._lock:
            self._stop()


_VERIFIER = _Verifier()
atexit.register(_VERIFIER.close)
