"""``swarm-tui attach TASK_ID|FILE``: watch a run another process is writing (an MCP swarm, a headless
run, another TUI), live, in the follow screen; a finished run opens as a normal replay.

A task id is looked up in the event logs' headers in the sessions folder; a path may name the session
file or its ``.events.jsonl`` log. Errors are one line and exit code 2.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from core.runtime.config import ConfigError, Settings
from core.runtime.config_file import load_settings
from core.sessions.eventlog import LOG_SUFFIX, EventLogReader, find_task, log_path_for, logged_runs

from .launch import Launch, OpenFollow, OpenReplay, Outcome
from .options import EXIT_USAGE, OneLineParser

MAX_LISTED = 10
DEFAULT_WAIT = 20.0  # a swarm just started may still be connecting or loading MiniLM


class _UserError(Exception):
    pass


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="swarm-tui attach",
        description="Watch a run live: an MCP task id (from swarm_start), or a session file being written.",
    )
    parser.add_argument("target", metavar="TASK_ID|FILE", help="the MCP task id, or a session / .events.jsonl file")
    parser.add_argument("--dir", type=Path, help="sessions directory to search (default: the configured one)")
    parser.add_argument("--config", type=Path, help="config file (default: the user config dir's config.toml)")
    parser.add_argument("--wait", type=float, default=DEFAULT_WAIT, metavar="SECONDS",
                        help=f"wait for a task that has not saved anything yet (default {DEFAULT_WAIT:g} s)")
    return parser


def resolve(target: str, directory: Path, wait: float = 0.0) -> tuple[Path | None, Path]:
    """(the event log or None, the session file) for a task id or a path; _UserError if not found.
    A task id not found yet is looked for again for up to ``wait`` seconds."""
    path = Path(target)
    if path.is_file():
        if path.name.endswith(LOG_SUFFIX):
            reader = EventLogReader(path)
            reader.read_new(limit=64 * 1024)
            return path, reader.session_path
        log = log_path_for(path)
        return (log if log.is_file() else None), path
    if path.parent != Path(".") or path.suffix:
        raise _UserError(f"{target}: no such file")
    run = find_task(directory, target)
    if run is None and wait > 0:
        print(f"swarm-tui: waiting up to {wait:g} s for task {target} to appear in {directory} …", file=sys.stderr)
        deadline = time.monotonic() + wait
        while run is None and time.monotonic() < deadline:
            time.sleep(0.25)
            run = find_task(directory, target)
    if run is not None:
        return run.log, run.session
    known = [r.task_id for r in logged_runs(directory) if r.task_id]
    more = f" (and {len(known) - MAX_LISTED} more)" if len(known) > MAX_LISTED else ""
    listed = ", ".join(known[:MAX_LISTED]) + more
    hint = f"known task ids there: {listed}" if known else "no MCP runs are recorded there"
    raise _UserError(
        f"no run with task id {target!r} in {directory} ({hint}; a run that has just started may take a few "
        "seconds to appear; the server's sessions folder may differ: --dir)"
    )


def main(argv: list[str]) -> Outcome:
    try:
        args = build_parser().parse_args(argv)
        try:
            settings = load_settings(args.config)
        except ConfigError as exc:
            raise _UserError(str(exc)) from None
        directory = args.dir if args.dir is not None else Path(settings.sessions_dir)
        log, session = resolve(args.target, directory, max(0.0, args.wait))
        return _open(log, session, settings)
    except _UserError as exc:
        print(f"swarm-tui: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _open(log: Path | None, session: Path, settings: Settings) -> Launch:
    if log is not None:
        return OpenFollow(log, session_path=session, settings=settings)
    # A session written before event logs existed (or by a run that kept none): a plain replay.
    from core.sessions.model import SessionFormatError
    from core.sessions.store import load_session

    try:
        loaded = load_session(session)
    except SessionFormatError as exc:
        raise _UserError(str(exc)) from None
    return OpenReplay(loaded, session, settings=settings)
