"""Model text as HTML: prose escaped as it is (line breaks kept by CSS), fenced code highlighted.

Highlighting is Pygments at export time (it escapes what it emits), so the page carries coloured spans and
a few CSS rules, never a highlighting library.
"""

from __future__ import annotations

import difflib
import re

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from core.sessions.html.math import is_latex, math_text, typeset
from core.sessions.html.page import esc, visible

# A fence opens with three or more backticks (and a language), closes with at least as many.
_FENCE = re.compile(r"^(?P<ticks>`{3,})[ \t]*(?P<lang>[\w+.#-]*)[^\n]*\n(?P<body>.*?)^(?P=ticks)`*[ \t]*$",
                    re.MULTILINE | re.DOTALL)
_FORMATTER = HtmlFormatter(nowrap=True)
MAX_HIGHLIGHT = 200_000  # characters: past this a block is shown plain (escaped), not coloured
# Longer than a screen (about 30 lines at the page's line height, or as many characters wrapped): folded.
FOLD_LINES = 30
FOLD_CHARS = 3_000
PEEK_LINES = 5
PEEK_WIDTH = 160  # characters of a preview line


def code_block(code: str, lang: str = "python") -> str:
    """One <pre> of code, coloured when the language is known (Pygments escapes; ``visible`` first shows the
    characters it would pass through unseen)."""
    code = visible(code)
    if len(code) > MAX_HIGHLIGHT:
        return f'<pre class="code">{esc(code)}</pre>'
    try:
        lexer = get_lexer_by_name(lang) if lang else TextLexer()
    except ClassNotFound:
        lexer = TextLexer()
    inner = highlight(code, lexer, _FORMATTER).rstrip("\n")
    return f'<pre class="code">{inner}</pre>'


def prose(text: str) -> str:
    """Escaped text, its LaTeX typeset as MathML (core.sessions.html.math)."""
    return f'<div class="prose">{math_text(text.strip(chr(10)))}</div>' if text.strip() else ""


def size_text(text: str) -> str:
    """How big a text is, as a reader counts: lines and bytes."""
    lines = text.count("\n") + 1
    size = len(text.encode("utf-8"))
    amount = f"{size:,} bytes" if size < 1000 else f"{size / 1000:.1f} KB" if size < 10_000 else f"{size / 1000:.0f} KB"
    return f"{lines:,} line{'s' if lines != 1 else ''}, {amount}"


def is_long(text: str) -> bool:
    return text.count("\n") >= FOLD_LINES or len(text) > FOLD_CHARS


def folded(text: str, inner: str) -> str:
    """``inner`` (the HTML of ``text``) inside a <details> whose summary shows the first lines and the size, when
    the text is longer than a screen; else ``inner`` as it is. Closed, the rest stays in the page: Chromium's
    find in page opens a <details> holding a match, and printing or saving keeps it."""
    if not is_long(text):
        return inner
    first = text.strip("\n").split("\n")[:PEEK_LINES]
    peek = "\n".join(line if len(line) <= PEEK_WIDTH else line[: PEEK_WIDTH - 1] + "…" for line in first)
    return (f'<details class="fold"><summary><span class="peek">{esc(peek)}</span>'
            f'<span class="more">show all · {esc(size_text(text))}</span></summary>{inner}</details>')


def rich_text(text: str, *, code_default: str = "", fold: bool = True, answer: bool = False) -> str:
    """Prose with its fenced code blocks highlighted. ``code_default``: the language of a text that is code
    without a fence (a code-domain answer), "" for prose. ``fold``: a text longer than a screen is folded
    (``folded``). ``answer``: a text that is only LaTeX (``\\frac{14}{3}``) is typeset whole."""
    if not text:
        return ""
    if answer and not code_default and is_latex(text):
        math = typeset(text, display=True)
        if math is not None:
            return math
    if fold and is_long(text):
        return folded(text, rich_text(text, code_default=code_default, fold=False))
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


MAX_DIFF = 50_000  # characters of either side: past this the two are not compared line by line


def diff_block(before: str, after: str, label: str) -> str:
    """What changed from ``before`` to ``after``, line by line (two lines of context), in a <details> a reader
    opens: "" when nothing changed; a note when either side is too long to compare."""
    if before == after:
        return ""
    if len(before) > MAX_DIFF or len(after) > MAX_DIFF:
        return f'<p class="legend">changed since {esc(label)} (too long to compare line by line)</p>'
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2))[2:]
    added = sum(1 for line in lines if line.startswith("+"))
    removed = sum(1 for line in lines if line.startswith("-"))
    css = {"+": "add", "-": "del", "@": "hunk"}
    body = "".join(f'<span class="{css.get(line[:1], "same")}">{esc(line[1:] if line[:1] in "+- " else line)}</span>\n'
                   for line in lines)
    return (f'<details class="diff"><summary>changes since {esc(label)} · +{added} −{removed} lines</summary>'
            f'<pre class="diff">{body}</pre></details>')


def _looks_like_code(text: str) -> bool:
    return bool(re.search(r"^\s*(def|class|import|from|return|for|if)\b", text, re.MULTILINE))


