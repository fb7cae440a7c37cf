"""What the command line asks the TUI to open: a request, not a call.

The command-line package never imports Textual (an import-linter contract in pyproject.toml holds it), so a
subcommand that ends in a screen returns one of these values instead of opening it; ``tui.entry`` (outside
this package) opens it. Parsing, validation and loading happen here, so a bad argument still answers with
one line before any screen starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.runtime.config import Settings


@dataclass(frozen=True)
class OpenRun:
    """A live run in the TUI (or the launch form when ``problem`` is None)."""

    problem: str | None
    settings: Settings
    demo: bool = False
    save: Path | None = None
    step: bool = False


@dataclass(frozen=True)
class OpenReplay:
    """A saved session (a core.sessions.model.Session) in the replay screen."""

    session: Any
    path: Path
    settings: Settings | None = None
    demo: bool = False


@dataclass(frozen=True)
class OpenFollow:
    """A run another process is writing, followed live from its event log."""

    log: Path
    session_path: Path
    settings: Settings


@dataclass(frozen=True)
class OpenBenchShow:
    """The benchmark screen for a loaded core.bench.report.Report."""

    report: Any


@dataclass(frozen=True)
class OpenCompareLive:
    """The compare screen for a live comparison (a core.compose.compare.ComparePlan)."""

    plan: Any
    demo: bool = False
    save: Path | None = None


@dataclass(frozen=True)
class OpenCompareSaved:
    """The compare screen over saved runs (core.compose.compare_saved.SavedRun), side by side."""

    runs: list[Any]
    source: str
    settings: Settings | None = None
    demo: bool = False


Launch = OpenRun | OpenReplay | OpenFollow | OpenBenchShow | OpenCompareLive | OpenCompareSaved

# What a command returns: an exit code (it did its work) or the screen to open.
Outcome = int | Launch
