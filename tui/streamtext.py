"""Make a streamed JSON reply readable while it arrives.

Agents answer with a JSON object, so the raw stream is one long line full of ``\\n`` and ``\\"``.
Unescaping the common JSON escapes chunk by chunk turns it back into the lines the model wrote; an
escape split across two chunks is carried over to the next one. Display only: the engine parses the
real reply.
"""

from __future__ import annotations

import re

_SIMPLE = {"n": "\n", "t": "    ", '"': '"', "\\": "\\", "/": "/", "r": "", "b": "", "f": ""}


class Verbatim:
    """The fallback for a reply that never looked like JSON (plain prose, DMoA's and TopoWeaver's agents):
    its backslashes are the model's own (LaTeX's \\frac, \\boxed), not JSON escapes to undo."""

    def feed(self, chunk: str) -> str:
        return chunk


class JsonUnescaper:
    def __init__(self) -> None:
        self._carry = ""

    def feed(self, chunk: str) -> str:
        text = self._carry + chunk
        self._carry = ""
        out: list[str] = []
        i = 0
        n = len(text)
        while i < n:
            j = text.find("\\", i)
            if j < 0:
                out.append(text[i:])
                break
            out.append(text[i:j])
            if j + 1 >= n:
                self._carry = "\\"
                break
            code = text[j + 1]
            if code == "u":
                if j + 6 > n:
                    self._carry = text[j:]
                    break
                try:
                    out.append(chr(int(text[j + 2 : j + 6], 16)))
                except ValueError:
                    out.append(text[j : j + 6])
                i = j + 6
                continue
            out.append(_SIMPLE.get(code, "\\" + code))
            i = j + 2
        return "".join(out)


# --- showing only what a reader wants while a JSON reply streams ----------------------------------

_WS = " \t\r\n"
_STRING_STOP = re.compile(r'["\\]')  # the characters that end a run of plain text inside a JSON string
_HIDDEN_KEYS = frozenset({"private"})  # notes to one teammate: shown once parsed, never mid-stream


class ReplyStream:
    """The readable part of a streamed reply, chunk by chunk.

    A reply shaped ``{"public": "...", ...}`` shows only the text of ``public`` (unescaped). A JSON
    reply without ``public`` (descriptors, the Manager) shows its top-level string fields as
    ``name: text`` lines. Anything else (prose, ``<think>``, broken JSON) falls back to the whole reply,
    unescaped, as before. ``feed`` returns the new display text, or None when the display was rewritten
    (the fallback); ``text`` is always the full display text.
    """

    def __init__(self) -> None:
        self.text = ""
        self.raw = ""
        self._state = "pre"
        self._fence = False  # inside a leading ```json line
        self._key = ""
        self._key_escape = False
        self._show = False  # the current string value is shown
        self._seen_public = False
        self._escape = ""  # a pending escape inside a shown string: "\\" or "\\uXX.."
        self._depth = 0  # nested value being skipped
        self._in_str = False
        self._str_escape = False
        self._raw_unescaper: JsonUnescaper | Verbatim | None = None

    def feed(self, chunk: str) -> str | None:
        self.raw += chunk
        if self._state == "raw":
            assert self._raw_unescaper is not None
            added = self._raw_unescaper.feed(chunk)
            self.text += added
            return added
        out: list[str] = []
        i, n = 0, len(chunk)
        while i < n:
            if self._state == "string" and not self._escape:
                # Most of a reply is plain string text: take the run up to the next quote or escape at once.
                stop = _STRING_STOP.search(chunk, i)
                end = stop.start() if stop else n
                if end > i:
                    if self._show:
                        out.append(chunk[i:end])
                    i = end
                    continue
            if not self._step(chunk[i], out):
                self._state = "raw"
                # Broken JSON or JSON after a preamble is shown unescaped; prose that never was JSON as written.
                json_like = self.raw.lstrip()[:1] in ("{", "`") or '{"' in self.raw
                self._raw_unescaper = JsonUnescaper() if json_like else Verbatim()
                self.text = self._raw_unescaper.feed(self.raw)
                return None
            i += 1
        added = "".join(out)
        self.text += added
        return added

    def _step(self, ch: str, out: list[str]) -> bool:
        """One character of a JSON reply; False when it is not the shape we follow."""
        state = self._state
        if state == "pre":
            if self._fence:
                self._fence = ch != "\n"
            elif ch == "`":
                self._fence = True
            elif ch == "{":
                self._state = "key_wait"
            elif ch not in _WS:
                return False
        elif state == "key_wait":
            if ch == '"':
                self._state, self._key = "key", ""
            elif ch == "}":
                self._state = "done"
            elif ch not in _WS and ch != ",":
                return False
        elif state == "key":
            if self._key_escape:
                self._key, self._key_escape = self._key + ch, False
            elif ch == "\\":
                self._key_escape = True
            elif ch == '"':
                self._state = "colon"
            else:
                self._key += ch
        elif state == "colon":
            if ch == ":":
                self._state = "value_wait"
            elif ch not in _WS:
                return False
        elif state == "value_wait":
            if ch == '"':
                self._start_string(out)
            elif ch in "{[":
                self._state, self._depth, self._in_str, self._str_escape = "skip", 1, False, False
            elif ch not in _WS:
                self._state = "scalar"
        elif state == "string":
            self._string_char(ch, out)
        elif state == "skip":
            self._skip_char(ch)
        elif state == "scalar":
            if ch == ",":
                self._state = "key_wait"
            elif ch == "}":
                self._state = "done"
        return True  # "done": whatever follows the object (a closing fence) is not shown

    def _start_string(self, out: list[str]) -> None:
        self._state, self._escape = "string", ""
        public = self._key == "public"
        self._show = public or (not self._seen_public and self._key not in _HIDDEN_KEYS)
        if public:
            if not self._seen_public and (self.text or out):
                out.append("\n\n")  # labelled fields came first: keep them, then the text
            self._seen_public = True
        elif self._show:
            out.append(("\n" if self.text or out else "") + f"{self._key}: ")

    def _string_char(self, ch: str, out: list[str]) -> None:
        if self._escape:
            self._escape += ch
            if self._escape[1] == "u":
                if len(self._escape) < 6:
                    return
                try:
                    text = chr(int(self._escape[2:6], 16))
                except ValueError:
                    text = self._escape
            else:
                text = _SIMPLE.get(ch, "\\" + ch)
            self._escape = ""
            if self._show:
                out.append(text)
        elif ch == "\\":
            self._escape = "\\"
        elif ch == '"':
            self._state = "key_wait"
        elif self._show:
            out.append(ch)

    def _skip_char(self, ch: str) -> None:
        if self._in_str:
            if self._str_escape:
                self._str_escape = False
            elif ch == "\\":
                self._str_escape = True
            elif ch == '"':
                self._in_str = False
        elif ch == '"':
            self._in_str = True
        elif ch in "{[":
            self._depth += 1
        elif ch in "}]":
            self._depth -= 1
            if self._depth == 0:
                self._state = "key_wait"


def display_text(raw: str) -> str:
    """What an agent pane shows for a whole streamed reply (the same result chunk by chunk)."""
    stream = ReplyStream()
    stream.feed(raw)
    return stream.text
