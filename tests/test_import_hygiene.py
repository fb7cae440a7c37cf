"""DESIGN rule 1: the headless core never imports Textual."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "core"


def test_every_core_module_imports_without_textual() -> None:
    modules = sorted(
        ".".join(path.relative_to(CORE.parent).with_suffix("").parts)
        for path in CORE.rglob("*.py")
        if path.name != "__init__.py" or path.parent != CORE
    )
    assert "core.runtime.engine" in modules and "core.routing.dytopo" in modules
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"core imported textual modules: {result.stdout.strip()}"


def test_headless_cli_path_does_not_import_textual() -> None:
    script = "import sys, tui.cli, tui.headless; print(any(m.startswith('textual') for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
