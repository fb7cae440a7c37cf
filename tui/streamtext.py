"""Make a streamed JSON reply readable while it arrives.

Agents answer with a JSON object, so the raw stream is one long line full of ``\\n`` and ``\\"``.
Unescaping the common JSON escapes chunk by chunk turns it back into the lines the model wrote; an
escape split across two chunks is carried over to the next one. Display only: the engine parses the
real reply.
"""

from __future__ import annotations

_SIMPLE = {"n": "\n", "t": "    ", '"': '"', "\\": "\\", "/": "/", "r": "", "b": "", "f": ""}


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
