"""``swarm-tui sessions | export | replay``: saved sessions from the command line.

Every user error (a missing, corrupt or hostile file, a bad flag) is one line on stderr and exit 2.
Everything printed from a file goes through core.runtime.textsafe.printable: a session cannot send
control sequences to the terminal. ``export`` to stdout is made printable the same way (control
characters shown as ␛, ␇, …); ``export -o FILE`` writes the text exactly as recorded.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from core.compose.compare_export import EXPORT_FORMATS, WRITERS
from core.compose.compare_html import export_page
from core.interop import INSTALL_HINT as INSPECT_HINT
from core.interop import inspect_installed
from core.methods.catalogue import unit_count
from core.runtime.config import ConfigError
from core.runtime.config_file import load_settings
from core.runtime.textsafe import one_line, printable
from core.sessions.compare_record import CompareSummary, list_records, load_record, looks_like_record
from core.sessions.export import FORMATS, export_session
from core.sessions.model import Session, SessionFormatError
from core.sessions.store import SUFFIXES, SessionSummary, list_sessions, load_session
from sessions import EXAMPLES_DIR

from .launch import OpenReplay, Outcome
from .options import EXIT_USAGE, OneLineParser, add_run_options

RECORD_FORMATS = EXPORT_FORMATS  # what a compare record exports as
INSPECT_FORMAT = "inspect"  # a session as an inspect_ai eval log (the inspect extra)


class _UserError(Exception):
    pass


def _sessions_dir() -> Path:
    try:
        return Path(load_settings().sessions_dir)
    except ConfigError as exc:
        raise _UserError(str(exc)) from None


def resolve_session_path(name: str) -> Path:
    """FILE as given if it exists; else, for a bare name, the sessions directory or the shipped
    examples (so ``swarm-tui replay example-code`` works on a fresh install)."""
    path = Path(name)
    if path.exists() or path.parent != Path("."):
        return path
    candidates = [name] if path.suffix.lower() in SUFFIXES else [name + s for s in SUFFIXES]
    for directory in (_sessions_dir(), EXAMPLES_DIR):
        for candidate in candidates:
            if (directory / candidate).is_file():
                return directory / candidate
    return path


def _load(name: str) -> tuple[Session, Path]:
    path = resolve_session_path(name)
    try:
        return load_session(path), path
    except SessionFormatError as exc:
        raise _UserError(str(exc)) from None


# --- sessions ----------------------------------------------------------------------------------


def _say(text: str = "", *, err: bool = False) -> None:
    print(printable(text), file=sys.stderr if err else sys.stdout)


def format_table(rows: Sequence[SessionSummary]) -> str:
    headers = ("date", "problem", "domain", "method", "done", "outcome", "tokens", "file")
    cells = [
        (
            s.created,
            one_line(("[demo] " if s.demo else "") + s.problem, 48),
            s.domain,
            printable(s.method),
            unit_count(s.method, s.rounds),  # DMoA's steps, TopoWeaver's turns: not "rounds"
            s.outcome,
            str(s.tokens),
            printable(s.path.name),
        )
        for s in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    numeric = {4, 6}

    def line(values: Sequence[str]) -> str:
        pairs = enumerate(zip(values, widths, strict=True))
        parts = [v.rjust(w) if i in numeric else v.ljust(w) for i, (v, w) in pairs]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(c) for c in cells)])


def _sessions(argv: list[str]) -> int:
    parser = OneLineParser(prog="swarm-tui sessions", description="List saved sessions.")
    parser.add_argument("--dir", type=Path, help="sessions directory (default: the configured one, ./sessions)")
    args = parser.parse_args(argv)
    directories = [args.dir] if args.dir is not None else [_sessions_dir()]
    if args.dir is None and EXAMPLES_DIR.resolve() != directories[0].resolve():
        directories.append(EXAMPLES_DIR)
    if args.dir is not None and args.dir.exists() and not args.dir.is_dir():
        raise _UserError(f"{args.dir}: not a directory")
    for index, directory in enumerate(directories):
        listing = list_sessions(directory)
        title = "shipped examples" if directory == EXAMPLES_DIR and index else "sessions"
        if index:
            _say()
        if not listing:
            _say(f"no {title} in {directory}")
        else:
            _say(f"{title} in {directory}:")
            _say(format_table(listing))
        for error in listing.errors:
            _say(f"swarm-tui: skipped {error}", err=True)
        records, errors = list_records(directory)
        if records:
            _say(f"\ncomparisons in {directory} (open with swarm-tui compare FILE):")
            _say(format_compares(records))
        for error in errors:
            _say(f"swarm-tui: skipped {error}", err=True)
    return 0


def format_compares(rows: Sequence[CompareSummary]) -> str:
    """A comparison per line: when, the problem, which methods, and its record's file."""
    return "\n".join(
        "  ".join([s.created, one_line(("[demo] " if s.demo else "") + s.problem, 48).ljust(48), s.domain.ljust(7),
                   one_line("compare: " + ", ".join(s.methods), 40).ljust(40), printable(s.path.name)]).rstrip()
        for s in rows
    )


# --- export ------------------------------------------------------------------------------------


def _export(argv: list[str]) -> int:
    parser = OneLineParser(prog="swarm-tui export", description="Export a session or a compare record.")
    parser.add_argument("file", help="a session file (.json or .toml), or a compare record (.compare.json)")
    parser.add_argument("--format", required=True,
                        choices=list(dict.fromkeys([*FORMATS, *RECORD_FORMATS, INSPECT_FORMAT])),
                        help="output format (html: one self-contained page; inspect: an inspect_ai eval log, with "
                        "-o OUT.eval; a compare record: md, json, csv, html)")
    parser.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    args = parser.parse_args(argv)
    path = resolve_session_path(args.file)
    if args.format == INSPECT_FORMAT:
        return _export_inspect(args.file, args.output)
    if path.is_file() and looks_like_record(path):
        text = _export_record(path, args.format, args.output)
    else:
        if args.format not in FORMATS:
            raise _UserError(f"--format {args.format} is for compare records; "
                             f"a session exports as {', '.join(FORMATS)}")
        session, _ = _load(args.file)
        text = export_session(session, args.format)
    if args.output is None:
        sys.stdout.write(printable(text))  # a terminal, or a pipe: either way nothing in it may act
        return 0
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise _UserError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    _say(f"wrote {args.output}", err=True)
    return 0


def _export_inspect(name: str, output: Path | None) -> int:
    """A session as an inspect eval log (core.interop.inspect_log), which needs the inspect extra."""
    if not inspect_installed():
        raise _UserError(f"--format inspect: {INSPECT_HINT}")
    if output is None or output.suffix not in (".eval", ".json"):
        raise _UserError("--format inspect writes a file: -o OUT.eval (inspect's own format) or -o OUT.json")
    session, _ = _load(name)
    from core.interop.inspect_log import write_session_log  # the optional extra, loaded only when asked for

    try:
        write_session_log(session, output)
    except OSError as exc:
        raise _UserError(f"cannot write {output}: {exc.strerror or exc}") from None
    _say(f"wrote {output} (inspect view opens it)", err=True)
    return 0


def _export_record(path: Path, fmt: str, out: Path | None) -> str:
    if fmt not in RECORD_FORMATS:
        raise _UserError(f"a compare record exports as {', '.join(RECORD_FORMATS)}, not {fmt}")
    try:
        record = load_record(path)
    except SessionFormatError as exc:
        raise _UserError(str(exc)) from None
    return export_page(record, out) if fmt == "html" else WRITERS[fmt](record)  # html: each method's page too


# --- replay ------------------------------------------------------------------------------------


def _replay(argv: list[str]) -> Outcome:
    parser = OneLineParser(prog="swarm-tui replay", description="Replay a saved session.")
    parser.add_argument("file", help="a session file (.json or .toml), or the name of a shipped example")
    parser.add_argument("--headless", action="store_true", help="print the round-by-round summary instead")
    parser.add_argument(
        "--fork",
        type=int,
        metavar="ROUND",
        help="with --headless: continue the run live from this completed round (a demo session's fork runs on "
        "the scripted server unless --base-url names an endpoint)",
    )
    parser.add_argument("--json", action="store_true", help="with --fork: the event stream as JSON lines on stdout")
    parser.add_argument("--save", type=Path, metavar="PATH", help="with --fork: save the new session here")
    parser.add_argument("--control", metavar="FILE", help="with --fork: steer the fork from a script of JSON lines "
                        "(- reads stdin); see docs/steering.md")
    parser.add_argument("--compare", action="store_true",
                        help="with --fork: then print the original and the fork side by side, as compare does")
    add_run_options(parser)
    args = parser.parse_args(argv)
    session, path = _load(args.file)
    for flag in ("control", "compare"):
        if getattr(args, flag) not in (None, False) and args.fork is None:
            raise _UserError(f"--{flag} goes with --headless --fork ROUND")
    if args.fork is not None:
        return _fork_headless(args, session, path)
    if not args.headless:
        from core.sessions.fork import fork_on_demo

        from .options import settings_from_args

        # Run options say where a fork from the replay screen continues (--demo, --base-url, ...).
        args.domain = session.domain
        args.team_record = session.metadata.team
        settings = settings_from_args(args)
        return OpenReplay(session, path, settings=settings, demo=fork_on_demo(session, args.demo, settings.base_url))
    # The very consumer a live headless run uses, fed the recorded events.
    from .headless import ProgressPrinter

    _say(f"replay of {path} (recorded {session.created}, app {session.app_version})")
    printer = ProgressPrinter(sys.stdout)
    for event in session.replay_events():
        printer(event)
    if session.outcome is None:
        _say(f"\nthe run did not finish: {session.completed_rounds} completed rounds recorded")
    else:
        _say(f"\nfinal answer ({session.outcome.answer_source or 'none'}):\n{session.outcome.final_answer}")
    return 0


def _fork_headless(args: argparse.Namespace, session: Session, path: Path) -> int:
    from core.sessions.fork import fork_on_demo, fork_point

    from .headless import run_headless
    from .options import check_save_path, settings_from_args

    if not args.headless:
        raise _UserError("--fork runs headless for now: add --headless (in the TUI, fork from the replay screen)")
    try:
        point = fork_point(session, args.fork, str(path))
    except ValueError as exc:
        raise _UserError(str(exc)) from None
    check_save_path(args.save)
    args.domain = session.domain
    args.team_record = session.metadata.team  # a fork goes on with the run's own team
    args.protocol = args.protocol or session.metadata.protocol
    args.fork_of = session  # a fork goes on with the run's own method and options (-o overrides them)
    settings = settings_from_args(args)
    if settings.max_rounds <= point.round:
        raise _UserError(
            f"--fork {point.round} leaves no round to run with max_rounds {settings.max_rounds}: "
            f"pass --max-rounds {min(10, point.round + 1)} or more"
            if point.round < 10
            else f"cannot fork from round {point.round}: 10 rounds is the most a run may have"
        )
    forked: list[Path] = []
    code = run_headless(session.problem, settings, demo=fork_on_demo(session, args.demo, settings.base_url),
                        json_lines=args.json, save=args.save, fork=point, control=args.control,
                        on_saved=forked.append)
    if args.compare and forked:
        _print_fork_compare(session, path, forked[0], point.round)
    return code


def _print_fork_compare(session: Session, path: Path, fork_path: Path, round_no: int) -> None:
    """The original and its fork side by side: the summary table ``swarm-tui compare`` prints."""
    from core.compose.compare_saved import saved_run

    from .compare_headless import format_summary

    try:
        fork = load_session(fork_path)
    except (OSError, SessionFormatError) as exc:
        _say(f"swarm-tui: cannot compare with the fork: {exc}", err=True)
        return
    rows = [saved_run(session, path, "original").row, saved_run(fork, fork_path, f"fork @ round {round_no}").row]
    _say(format_summary(rows))


_COMMANDS = {"sessions": _sessions, "export": _export, "replay": _replay}


def main(name: str, argv: list[str]) -> Outcome:
    try:
        return _COMMANDS[name](argv)
    except _UserError as exc:
        _say(f"swarm-tui: error: {exc}", err=True)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. piped into head
        return 0
