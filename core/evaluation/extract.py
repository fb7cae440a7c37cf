"""Pull runnable code and tests out of agent text and problem statements.

Agents answer in Markdown with fenced blocks, sometimes with bare code; tests arrive as assert lines,
``def test_*`` functions, or as doctest examples in the problem's docstring. Everything returned here is
plain source that ``core.evaluation.sandbox`` can run; nothing is executed in this process.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from typing import TypeGuard

# An opening fence (``` or ~~~, optional language tag) up to its closing fence or the end of the text
# (agents get cut off mid-block).
_FENCE = re.compile(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+#.-]*)[^\n]*\n"
    r"(?P<body>.*?)(?:^[ \t]*(?P=fence)[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE,
)
_PYTHON_TAGS = {"python", "py", "python3", "py3", "ipython"}
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _looks_like_code(tree: ast.Module) -> bool:
    """Prose such as ``Done`` parses as a bare name; real code has at least one non-expression statement."""
    return any(not isinstance(node, ast.Expr) for node in tree.body)


def _fenced(text: str) -> list[tuple[str, str]]:
    return [(m.group("lang").lower(), textwrap.dedent(m.group("body")).strip("\n")) for m in _FENCE.finditer(text)]


def extract_code_blocks(text: str) -> list[str]:
    """Python code blocks in ``text``, in order.

    Blocks tagged as Python always count; untagged fences count when they parse as Python; with no
    fences at all, the whole text counts when it parses and is more than a bare expression.
    """
    blocks = _fenced(text)
    found: list[str] = []
    for lang, body in blocks:
        if not body.strip():
            continue
        if lang in _PYTHON_TAGS:
            found.append(body)
        elif not lang:
            tree = _parse(body)
            if tree is not None and _looks_like_code(tree):
                found.append(body)
    if blocks:
        return found
    bare = textwrap.dedent(text).strip("\n")
    tree = _parse(bare) if bare.strip() else None
    return [bare] if tree is not None and _looks_like_code(tree) else []


def _defines(block: str) -> bool:
    tree = _parse(block)
    if tree is None:
        return False
    return any(isinstance(node, _DEFINITIONS) for node in tree.body)


def latest_code(texts: list[str]) -> str:
    """The newest solution among ``texts`` (oldest first), e.g. one role's messages over the rounds.

    Takes the newest text that has code. Within it, every block that defines a function or class is
    kept, in order, so a helper block plus a main block both survive and a later redefinition wins at
    run time; blocks that only call or test things are dropped. A text whose blocks define nothing
    yields its last block.
    """
    for text in reversed(texts):
        blocks = extract_code_blocks(text)
        if not blocks:
            continue
        defining = [block for block in blocks if _defines(block)]
        return "\n\n".join(defining) if defining else blocks[-1]
    return ""


def _stdlib_imports(tree: ast.Module, source: str) -> list[str]:
    """Top-level imports of standard-library modules, which tests may need; never `from solution ...`."""
    kept: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if all(name.split(".")[0] in sys.stdlib_module_names for name in names):
            segment = ast.get_source_segment(source, node)
            if segment:
                kept.append(segment)
    return kept


def _is_main_guard(node: ast.stmt) -> TypeGuard[ast.If]:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def _tests_in_tree(tree: ast.Module, source: str) -> list[str]:
    prefix = _stdlib_imports(tree, source)
    tests: list[str] = []
    statements = list(tree.body)
    for node in list(statements):
        if _is_main_guard(node):
            statements.extend(node.body)
    for node in statements:
        snippet = ""
        if isinstance(node, ast.Assert):
            snippet = ast.get_source_segment(source, node) or ""
        elif (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test")
            and not node.args.args
            and not node.args.posonlyargs
            and not node.args.kwonlyargs
        ):
            body = ast.get_source_segment(source, node, padded=True) or ""
            # Decorators are not part of the segment; pytest markers would not exist in the sandbox anyway.
            call = f"{node.name}()"
            if isinstance(node, ast.AsyncFunctionDef):
                body, call = "import asyncio\n" + body, f"asyncio.run({call})"
            snippet = f"{textwrap.dedent(body)}\n{call}"
        if snippet:
            tests.append("\n".join([*prefix, textwrap.dedent(snippet)]))
    return tests


_INLINE_CODE = re.compile(r"`([^`\n]+)`")


def _assert_lines(text: str) -> list[str]:
    """Single-line asserts in prose or in a block that does not parse as a whole."""
    found: list[str] = []
    for line in text.splitlines():
        # The whole line, or inline code spans in a sentence ("check that `assert f(2) == 4` holds").
        for candidate in [line.strip(), *_INLINE_CODE.findall(line)]:
            candidate = candidate.strip()
            if candidate.startswith("assert ") or candidate.startswith("assert("):
                tree = _parse(candidate)
                if tree is not None and len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert):
                    found.append(candidate)
                    break
    return found


def extract_tests(text: str) -> list[str]:
    """Test snippets in ``text``, each runnable on its own after the solution code.

    Assert statements (in fenced blocks, bare lines, or inline code spans in prose), and
    ``def test_*()`` functions turned into a definition plus a call. Standard-library imports from
    the same block are prepended to each snippet. Fenced tests come first, then prose ones;
    duplicates are dropped.
    """
    tests: list[str] = []
    blocks = _fenced(text)
    sources = [body for lang, body in blocks if not lang or lang in _PYTHON_TAGS] if blocks else [text]
    for source in sources:
        dedented = textwrap.dedent(source)
        tree = _parse(dedented)
        if tree is not None:
            tests.extend(_tests_in_tree(tree, dedented))
        else:
            tests.extend(_assert_lines(dedented))
    if blocks:
        # Prose outside the fences may still hold one-line asserts ("e.g. `assert f(2) == 4`").
        tests.extend(_assert_lines(_FENCE.sub("", text)))
    return list(dict.fromkeys(t for t in tests if t.strip()))


def _is_float_literal(source: str) -> bool:
    tree = _parse(source)
    if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return False
    value = tree.body[0].value
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub | ast.UAdd):
        value = value.operand
    return isinstance(value, ast.Constant) and isinstance(value.value, float)


def _is_expression(source: str) -> bool:
    try:
        ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


_ATOMS = (ast.Call, ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.List, ast.Dict, ast.Set)


def _operand(source: str) -> str:
    """``source`` as a comparison operand: no comments, parenthesised unless atomic (call, name, literal)."""
    node = ast.parse(source, mode="eval").body
    text = ast.get_source_segment(source, node) or source
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return text
    return text if isinstance(node, _ATOMS) else f"({text})"


def _assertion(source: str, want: str) -> str:
    got, expected = _operand(source), _operand(want)
    if _is_float_literal(want):
        return f"assert abs({got} - {expected}) <= 1e-6 * max(1.0, abs({expected}))"
    return f"assert {got} == {expected}"


# Prose examples: `f(1, 2) ==> 3`, `f(x) ➞ y`, `f(x) == y`, `f(x) returns y`, `f(x) should return y`.
# A bare `=` is left out: prompts use it for definitions too ("tri(n) = tri(n - 1) + ...", "tri(4) = 3").
_ARROW = re.compile(r"\s*(?:==>|=>|➞|->|→|==|\bshould return\b|\bshould be\b|\breturns\b)\s*(?P<want>.+)$")
_DEF_NAME = re.compile(r"^\s*def\s+(\w+)\s*\(", re.MULTILINE)


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _call_at(line: str, start: int) -> str:
    """The shortest text from ``start`` that parses as a call with literal arguments (not `f(x)`)."""
    for end in range(start, len(line)):
        if line[end] != ")":
            continue
        text = line[start : end + 1]
        try:
            node = ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        if not isinstance(node, ast.Call):
            return ""
        arguments = [*node.args, *(kw.value for kw in node.keywords)]
        return text if all(_is_literal(arg) for arg in arguments) else ""
    return ""


def _literal(text: str) -> str:
    """``text`` (or it without trailing prose punctuation) when it is a Python literal."""
    # Sentence punctuation first: "returns 2." means 2, not the float 2.0.
    for candidate in (text.strip().rstrip(".,;").strip(), text.strip()):
        try:
            value = ast.literal_eval(candidate)
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
            continue
        if candidate.startswith("(") and not isinstance(value, tuple):
            return ""  # `("Venus")` in prose means a one-element tuple, not a string: ambiguous
        return candidate
    return ""


def _prose_examples(prompt: str) -> list[str]:
    """One-line examples written as prose, only for functions the prompt itself defines."""
    names = set(_DEF_NAME.findall(prompt))
    if not names:
        return []
    call_start = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\s*\(")
    tests: list[str] = []
    for line in prompt.splitlines():
        if _DEF_NAME.match(line) or ">>>" in line:
            continue
        for match in call_start.finditer(line):
            call = _call_at(line, match.start())
            if not call:
                continue
            rest = _ARROW.match(line, match.start() + len(call))
            want = _literal(rest.group("want")) if rest else ""
            if want:
                tests.append(_assertion(call, want))
            break
    return tests


def _strip_docstring_end(want: str) -> str:
    """doctest reads a closing triple quote right under the output as part of it; drop it."""
    kept: list[str] = []
    for line in want.splitlines():
        stripped = line.strip()
        for quote in ('"""', "'''"):
            if stripped.endswith(quote):
                stripped = stripped[: -len(quote)].strip()
                kept.append(stripped)
                return "\n".join(k for k in kept if k).strip()
        kept.append(stripped)
    return "\n".join(kept).strip()


def docstring_examples(prompt: str) -> list[str]:
    """The prompt's own examples as asserts.

    Doctests: ``>>> f(x)`` then ``y`` becomes ``assert f(x) == y``. Floats compare with a tolerance
    (doctest compares their printed form). Examples without output (``>>> x = 3``) become setup lines
    for the following asserts; examples whose output is not a Python expression (printed text,
    tracebacks) are skipped. Also one-line prose examples of functions the prompt defines, such as
    ``f(1, 2) ==> 3`` or ``f("a") ➞ True``, when the expected value is a Python literal.
    """
    import doctest  # here, not at the top: it pulls in pdb and unittest, which a run's start never needs

    try:
        examples = doctest.DocTestParser().get_examples(prompt)
    except ValueError:  # inconsistent indentation in the docstring
        return []
    setup: list[str] = []
    tests: list[str] = []
    for example in examples:
        source = example.source.strip()
        want = _strip_docstring_end(example.want)
        if example.exc_msg is not None:
            continue
        if not want:
            if _parse(source) is not None:
                setup.append(source)
            continue
        if not _is_expression(source) or source.startswith("print(") or not _is_expression(want):
            continue
        want_expr = " ".join(want.split()) if "\n" in want else want
        if not _is_expression(want_expr):
            continue
        tests.append("\n".join([*setup, _assertion(source, want_expr)]))
    tests.extend(_prose_examples(prompt))
    return list(dict.fromkeys(tests))
