"""The command line as a user runs it: a fresh interpreter on this checkout's code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT


def swarm(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH: this checkout's code, whatever the working directory (an editable install may point elsewhere).
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env=full_env,
        cwd=cwd or ROOT,
    )
