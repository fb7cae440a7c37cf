"""LaTeX in model text typeset as MathML (Chromium renders MathML Core: no script, no font download).

``latex2mathml`` converts at export time. Its output is not trusted as markup: it copies ``\\text{...}`` into
the tree unescaped and turns ``\\href`` into an attribute, so the tree is parsed and rebuilt from an allowlist
of MathML elements and attributes, every text escaped by ``page.esc``. Anything that does not convert, or
converts to something outside the allowlist, stays its source text. The source is kept in the title.

Recognised in prose: ``$...$`` (pandoc's rule: no space inside the dollars, no digit after the closing one, so
"$5 and $10" stays text), ``$$...$$``, ``\\(...\\)``, ``\\[...\\]``, and bare ``\\boxed{}``, ``\\frac{}{}``,
``\\sqrt{}`` groups; an answer that is only LaTeX (``\\frac{14}{3}``) is typeset whole.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from functools import lru_cache

from latex2mathml.converter import convert

from core.sessions.html.page import esc

ELEMENTS = frozenset({
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup", "mfrac", "msqrt", "mroot",
    "mstyle", "merror", "mpadded", "mphantom", "mover", "munder", "munderover", "mtable", "mtr", "mtd",
    "mmultiscripts", "mprescripts", "none", "menclose",
})
ATTRIBUTES = frozenset({
    "display", "mathvariant", "stretchy", "fence", "separator", "lspace", "rspace", "symmetric", "largeop",
    "movablelimits", "accent", "accentunder", "linethickness", "displaystyle", "scriptlevel", "columnalign",
    "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines", "frame", "width", "height", "depth",
    "voffset", "minsize", "maxsize", "notation", "form",
})
MAX_SOURCE = 2_000  # characters of one expression: longer ones stay text
_MATHML_NS = "{http://www.w3.org/1998/Math/MathML}"

# Delimited math, display first. Group names: d (display) or i (inline).
_DELIMITED = re.compile(
    r"\$\$(?P<d1>.+?)\$\$|\\\[(?P<d2>.+?)\\\]|\\\((?P<i1>.+?)\\\)"
    r"|(?<![\\$\w])\$(?P<i2>[^\s$](?:[^$\n]*?[^\s$\\])?)\$(?![\d$])",
    re.DOTALL,
)
_BARE = re.compile(r"\\(?:boxed|d?frac|tfrac|sqrt)(?![a-zA-Z])")
_WORD = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{4,}")  # an English word, not a \command


class _Unsafe(ValueError):
    """The converted tree holds an element outside the allowlist, or a command it did not convert."""


_COMMAND = re.compile(r"\\[a-zA-Z]")  # a command latex2mathml did not know, copied as text


def _rebuild(node: ET.Element) -> str:
    tag = node.tag.removeprefix(_MATHML_NS)
    if tag not in ELEMENTS:
        raise _Unsafe(tag)
    if _COMMAND.search(node.text or ""):
        raise _Unsafe(node.text)
    attrs = "".join(f' {k}="{esc(v)}"' for k, v in sorted(node.attrib.items()) if k in ATTRIBUTES)
    inner = esc(node.text or "") + "".join(_rebuild(child) + esc(child.tail or "") for child in node)
    return f"<{tag}{attrs}>{inner}</{tag}>"


@lru_cache(maxsize=512)
def typeset(source: str, display: bool = False) -> str | None:
    """One expression as MathML (with its source as the title), or None when it cannot be typeset safely."""
    source = source.strip()
    if not source or len(source) > MAX_SOURCE:
        return None
    try:
        tree = ET.fromstring(convert(source, display="block" if display else "inline"))
        mathml = _rebuild(tree)
    except Exception:  # latex2mathml raises many kinds on bad input: the source text stays
        return None
    tag = "div" if display else "span"
    return f'<{tag} class="math{" display" if display else ""}" title="{esc(source)}">{mathml}</{tag}>'


def _bare_end(text: str, start: int) -> int:
    """Where a bare command's brace groups (and \\sqrt's optional [n]) end; ``start`` is after the command."""
    i = start
    while i < len(text) and text[i] in "[{":
        close = "]" if text[i] == "[" else "}"
        depth, j = 0, i
        while j < len(text):
            if text[j] == text[i]:
                depth += 1
            elif text[j] == close:
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if depth:
            return start  # unbalanced: not math
        i = j + 1
    return i


def _bare(text: str) -> str:
    """Escaped text with its bare \\boxed{}, \\frac{}{} and \\sqrt{} groups typeset."""
    out: list[str] = []
    last = 0
    for match in _BARE.finditer(text):
        if match.start() < last:
            continue
        end = _bare_end(text, match.end())
        html = typeset(text[match.start():end]) if end > match.end() else None
        if html is None:
            continue
        out += [esc(text[last:match.start()]), html]
        last = end
    return "".join(out) + esc(text[last:])


def math_text(text: str) -> str:
    """Text as HTML: escaped, its LaTeX typeset where it converts."""
    if "\\" not in text and "$" not in text:
        return esc(text)
    out: list[str] = []
    last = 0
    for match in _DELIMITED.finditer(text):
        display = bool(match["d1"] or match["d2"])
        source = match["d1"] or match["d2"] or match["i1"] or match["i2"] or ""
        html = typeset(source, display)
        if html is None:
            continue
        out += [_bare(text[last:match.start()]), html]
        last = match.end()
    return "".join(out) + _bare(text[last:])


def is_latex(text: str) -> bool:
    """A short text that is only LaTeX (an answer such as ``\\frac{14}{3}``), not prose with a command in it."""
    text = text.strip()
    return (0 < len(text) <= 300 and "\n" not in text and "$" not in text and bool(re.search(r"\\[a-zA-Z]+", text))
            and not _WORD.search(text))
