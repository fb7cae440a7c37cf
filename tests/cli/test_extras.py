"""Without the optional extras, --otel and the inspect export say in one line how to install them."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.runtime.config import ConfigError, Settings
from core.telemetry import setup
from tests.support.paths import ROOT


def test_otel_without_the_extra_is_one_line_saying_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(setup, "otel_installed", lambda: False)
    with pytest.raises(ConfigError) as refused:
        setup.check_tracing(Settings(otel_endpoint="http://127.0.0.1:4318"))
    expected = "--otel http://127.0.0.1:4318: tracing needs the otel extra: pip install 'swarm-tui[otel]'"
    assert str(refused.value) == expected
    setup.check_tracing(Settings())  # no --otel: nothing to say


@pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is not None, reason="the inspect extra is installed here")
def test_the_inspect_export_without_the_extra_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    session = next((ROOT / "sessions").glob("example-*.json"))
    result = subprocess.run([sys.executable, "-m", "tui", "export", str(session), "--format", "inspect", "-o",
                             str(tmp_path / "run.eval")], capture_output=True, text=True, timeout=120, env=env,
                            cwd=ROOT)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'swarm-tui[inspect]'" in lines[0]
    assert not (tmp_path / "run.eval").exists()
