"""The ``swarm-tui`` console command (and ``python -m tui``): parse with ``tui.cli``, then open the screen
it asks for.

This is the one place that starts the Textual app from the command line: ``tui.cli`` never imports
Textual (a contract in pyproject.toml), it returns a ``tui.cli.launch`` request and this module opens it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from tui.cli.launch import Launch
from tui.cli.main import main as cli_main
from tui.cli.options import EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """The command line's outcome: its exit code, or the exit code of the screen it opened."""
    outcome = cli_main(argv)
    if isinstance(outcome, int):
        return outcome
    try:
        return open_screen(outcome)
    except KeyboardInterrupt:
        print("swarm-tui: interrupted", file=sys.stderr)
        return 130


def open_screen(request: Launch) -> int:
    """Open the screen a command asked for; returns the app's exit code."""
    # Imported here, not at the top: Textual and the screens take a noticeable part of a second to import,
    # and --help, argument errors and --headless runs never need them (bench/startup.py measures it).
    try:
        from tui import app
    except ImportError as exc:
        if exc.name not in ("tui.app", "textual"):  # only a build without the TUI; any other is a bug
            raise
        print("swarm-tui: error: the TUI is not available in this build: use --headless", file=sys.stderr)
        return EXIT_USAGE
    return app.run_request(request)


def entry() -> None:
    """The console command: main(), then an exit that neither waits for nor crashes in a MiniLM load still
    under way in its background thread (a run that needed no vector ends before the load does: joining it
    would stall the exit for seconds, and tearing down native code mid-load can abort the process)."""
    try:
        code: int | str | None = main()
    except SystemExit as stop:
        code = stop.code
    embeddings = sys.modules.get("core.llm.embeddings")
    if embeddings is not None and embeddings.loading_in_progress():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if isinstance(code, int) else (0 if code is None else 2))
    raise SystemExit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
