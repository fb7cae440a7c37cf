"""bench/tui_stream.py still measures what it says: every streamed character reaches the panes of the run
screen and of the compare screen (its timing figures are printed, never asserted here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "tui_stream.py"


@pytest.mark.parametrize("screen", [[], ["--compare", "2"]], ids=["run screen", "compare screen"])
def test_the_streaming_bench_shows_every_streamed_character(screen: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--agents", "2", "--rate", "40", "--seconds", "0.5", *screen],
        capture_output=True, text=True, timeout=240, cwd=SCRIPT.parents[1],
    )
    # "yes" needs each pane to hold its whole reply, at least 90 % of rate x seconds chunks (not a cut-off one)
    assert "all text in the panes: yes" in done.stdout, done.stdout + done.stderr
