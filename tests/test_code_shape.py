"""The shape that keeps the code easy to carry on, checked over the tree's syntax (no imports run): test
helpers live in tests/support, never in another test module."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import ROOT

TESTS = ROOT / "tests"


def is_test_module(module: str) -> bool:
    """A module pytest collects (test_*.py) or a conftest: neither is a place to import helpers from."""
    last = module.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) for each ``from X import`` and ``import X`` in the file, relative ones resolved."""
    package = ".".join(path.relative_to(ROOT).parent.parts)
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found += [(node.lineno, module)]
            if node.module is None:  # from . import test_x
                found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def test_no_test_module_imports_another_test_module() -> None:
    offending = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, module in imported_modules(path)
        if module.startswith("tests.") and is_test_module(module)
    ]
    assert not offending, "move the helper into tests/support:\n" + "\n".join(offending)


def test_the_support_package_holds_nothing_pytest_collects() -> None:
    support = TESTS / "support"
    assert (support / "__init__.py").is_file()
    assert not [p.name for p in support.glob("*.py") if is_test_module(p.stem)]
