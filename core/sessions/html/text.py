"""Model text as HTML: prose escaped as it is (line breaks kept by CSS), fenced code highlighted.

Highlighting is Pygments at export time (it escapes what it emits), so the page carries coloured spans and
a few CSS rules, never a highlighting library.
"""

from __future__ import annotations

import re

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from core.sessions.html.page import esc

# A fence opens with three or more backticks (and a language), closes with at least as many.
_FENCE = re.compile(r"^(?P<ticks>`{3,})[ \t]*(?P<lang>[\w+.#-]*)[^\n]*\n(?P<body>.*?)^(?P=ticks)`*[ \t]*$",
                    re.MULTILINE | re.DOTALL)
_FORMATTER = HtmlFormatter(nowrap=True)
MAX_HIGHLIGHT = 200_000  # characters: past this a block is shown plain (escaped), not coloured


def code_block(code: str, lang: str = "python") -> str:
    """One <pre> of code, coloured when the language is known."""
    if len(code) > MAX_HIGHLIGHT:
        return f'<pre class="code">{esc(code)}</pre>'
    try:
        lexer = get_lexer_by_name(lang) if lang else TextLexer()
    except ClassNotFound:
        lexer = TextLexer()
    inner = highlight(code, lexer, _FORMATTER).rstrip("\n")
    return f'<pre class="code">{inner}</pre>'


def prose(text: str) -> str:
    return f'<div class="prose">{esc(text.strip(chr(10)))}</div>' if text.strip() else ""


def rich_text(text: str, *, code_default: str = "") -> str:
    """Prose with its fenced code blocks highlighted. ``code_default``: the language of a text that is code
    without a fence (a code-domain answer), "" for prose."""
    if not text:
        return ""
    if code_default and "```" not in text and _looks_like_code(text):
        return code_block(text, code_default)
    out: list[str] = []
    last = 0
    for match in _FENCE.finditer(text):
        out.append(prose(text[last:match.start()]))
        out.append(code_block(match["body"].rstrip("\n"), match["lang"].lower() or code_default or "python"))
        last = match.end()
    out.append(prose(text[last:]))
    return "".join(out)


def _looks_like_code(text: str) -> bool:
    return bool(re.search(r"^\s*(def|class|import|from|return|for|if)\b", text, re.MULTILINE))


