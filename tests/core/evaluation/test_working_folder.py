"""The Python processes the app starts itself (the code sandbox's two, the math-verify worker) import nothing
from the folder the app runs in, whatever PYTHONPATH says: a cloned repository's modules of the same names
never run in their place (``-I``, their own working folder; ``swarm-tui serve`` starts the app the same way)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.evaluation.math_answers import _Verifier
from core.evaluation.sandbox import Outcome, SandboxLimits, run_code


def _planted(folder: Path, *modules: str) -> Path:
    """Modules in ``folder`` that leave a marker when imported; the marker's path."""
    marker = folder / "MARKER-imported-from-the-working-folder"
    for name in modules:
        (folder / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n", encoding="utf-8")
    return marker


def test_the_code_sandbox_imports_nothing_from_the_apps_folder(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    marker = _planted(tmp_path, "planted", "marshal", "resource")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:")
    result = run_code("import planted\n", limits=SandboxLimits(wall_seconds=5, cpu_seconds=5))
    assert result.outcome == Outcome.RUNTIME_ERROR and "planted" in result.traceback
    assert run_code("def inc(x):\n    return x + 1\n", "assert inc(1) == 2").outcome == Outcome.PASSED
    assert not marker.exists()


def test_the_math_worker_imports_nothing_from_the_apps_folder(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    marker = _planted(tmp_path, "math_verify", "sympy")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:")
    worker = _Verifier()  # a fresh process, started from this folder
    try:
        assert worker.compare("$\\frac{1}{2}$", "$0.5$", 5)
    finally:
        worker.close()
    assert not marker.exists()
