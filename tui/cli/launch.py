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

DEMO_PACE = 0.02  # seconds between the demo server's chunks on screen: text streams at a pace one can read


@dataclass(frozen=True, kw_only=True)
class RunsOn:
    """Where the runs a screen starts (a live run, a comparison, a fork from a replay) send their calls: the
    configured endpoint, or the scripted demo server (``demo``) with ``demo_chunk_delay`` seconds between
    chunks. Every request carries it, so no face threads the pace through parameters of its own (the app
    makes it a core.compose.plan.BackendChoice)."""

    demo: bool = False
    demo_chunk_delay: float = DEMO_PACE


@dataclass(frozen=True)
class OpenRun(RunsOn):
    """A live run in the TUI (or the launch form when ``problem`` is None)."""

    problem: str | None
    settings: Settings
    save: Path | None = None
    step: bool = False


@dataclass(frozen=True)
class OpenReplay(RunsOn):
    """A saved session (a core.sessions.model.Session) in the replay screen."""

    session: Any
    path: Path
    settings: Settings | None = None


@dataclass(frozen=True)
class OpenFollow(RunsOn):
    """A run another process is writing, followed live from its event log (``session_path``: where its session
    is saved; by default as the log's header says)."""

    log: Path
    session_path: Path | None = None
    settings: Settings | None = None


@dataclass(frozen=True)
class OpenBenchShow(RunsOn):
    """The benchmark screen for a loaded core.bench.report.Report."""

    report: Any


@dataclass(frozen=True)
class OpenCompareLive(RunsOn):
    """The compare screen for a live comparison (a core.compose.compare.ComparePlan)."""

    plan: Any
    save: Path | None = None


@dataclass(frozen=True)
class OpenCompareSaved(RunsOn):
    """The compare screen over saved runs (core.compose.compare_saved.SavedRun), side by side."""

    runs: list[Any]
    source: str
    settings: Settings | None = None


Launch = OpenRun | OpenReplay | OpenFollow | OpenBenchShow | OpenCompareLive | OpenCompareSaved

# What a command returns: an exit code (it did its work) or the screen to open.
Outcome = int | Launch
