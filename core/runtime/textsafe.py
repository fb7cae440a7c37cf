"""Text from a model or a file, made safe to show on a terminal: the one function every printer uses.

Model replies, server error messages and session files can carry terminal control sequences: a window
title (OSC 0, ``ESC ] 0 ; … BEL``), a clipboard write (OSC 52), clear screen (CSI ``ESC [ 2 J``), or the
same through 8-bit C1 controls (``\\x9b`` is CSI). Printed raw, they act on the user's terminal.

``printable`` replaces every control character with a visible stand-in instead of dropping it, so
nothing is hidden and nothing acts:

* C0 controls other than newline and tab become their Unicode control pictures (ESC -> ``␛``,
  BEL -> ``␇``, NUL -> ``␀``, …); a CR before a newline is dropped (Windows line ends), a lone CR
  becomes ``␍`` (it would move the cursor back over the line);
* DEL becomes ``␡``;
* a C1 control becomes ``␛`` and its 7-bit equivalent (``\\x9b`` -> ``␛[``, ``\\x9d`` -> ``␛]``).

The rest of an escape sequence is then plain text (``␛]0;pwned␇``): the user sees what was sent. The
replacement works character by character, so text that arrives in pieces (a stream) can be made safe
piece by piece. Bidirectional-override characters are left alone: they reorder what is shown but do
not control the terminal, and right-to-left text needs them.

Only what is *shown* goes through here: sessions and files written with ``-o`` keep the raw text.
JSON output escapes controls itself (``json.dumps`` writes C0 as ``\\u001b``); ``json_safe`` adds the
characters it leaves raw (DEL, C1, the line and paragraph separators).
"""

from __future__ import annotations

import re
from dataclasses import fields, is_dataclass, replace
from typing import Any, TypeVar

_CONTROL_RE = re.compile("\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_PICTURES: dict[str, str] = {"\r\n": "\n", "\x7f": "\u2421"}
_PICTURES.update({chr(c): chr(0x2400 + c) for c in range(0x20) if chr(c) not in "\n\t"})
_PICTURES.update({chr(c): "\u241b" + chr(c - 0x40) for c in range(0x80, 0xA0)})

_JSON_RAW_RE = re.compile("[\x7f-\x9f\u2028\u2029]")


def _picture(match: re.Match[str]) -> str:
    return _PICTURES[match.group()]


def printable(text: str) -> str:
    """``text`` with every terminal control character replaced by a visible stand-in (see the module
    docstring); newlines and tabs are kept. Text without controls comes back as the same object."""
    if not text:
        return text
    return _CONTROL_RE.sub(_picture, text)


def one_line(text: str, width: int) -> str:
    """``text`` made printable, on one line (whitespace runs collapsed), cut to ``width`` with an ellipsis:
    a table cell."""
    text = " ".join(printable(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def json_safe(json_text: str) -> str:
    """JSON text (from ``json.dumps``, which already escapes C0) with DEL, C1 controls and U+2028/2029
    escaped as ``\\uXXXX`` too. Such characters only occur inside JSON strings, so the result is the
    same JSON value, and safe to print."""
    return _JSON_RAW_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def _dirty(value: Any) -> bool:
    if isinstance(value, str):
        return bool(_CONTROL_RE.search(value))
    if isinstance(value, dict):
        return any(_dirty(k) or _dirty(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_dirty(v) for v in value if not isinstance(v, float | int))
    return False


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_clean(v) for v in value)
    return value


T = TypeVar("T")


def printable_fields(obj: T) -> T:
    """A dataclass (e.g. a core event) whose text, at any depth, is ``printable``: the object itself when
    nothing needs changing, else a copy. The original is never modified (the session recorder holds it)."""
    if not is_dataclass(obj) or isinstance(obj, type):
        return obj
    changes = {
        f.name: _clean(getattr(obj, f.name)) for f in fields(obj) if f.init and _dirty(getattr(obj, f.name))
    }
    return replace(obj, **changes) if changes else obj
