"""The ``swarm-tui`` command line: the TUI by default, ``--headless`` runs, and the subcommands.

This package never imports Textual: a command that ends in a screen returns what to open
(``tui.cli.launch``) and ``tui.entry`` opens it. Heavy modules (torch via sentence-transformers) are imported
in the branch that needs them, so ``--help`` and argument errors answer at once.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from core.evaluation.sandbox.isolation import protect_process

from .launch import OpenRun, Outcome
from .options import CliError, check_save_path, fail, read_problem, settings_from_args
from .run_parser import SUBCOMMANDS, build_parser


def main(argv: Sequence[str] | None = None) -> Outcome:
    """Parse the command line and do what it says: an exit code, or the screen to open (tui.entry opens it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # Whatever runs as this user (model code without isolation among it) cannot read our environment (the
    # API key) through /proc/<pid>/environ, nor our memory.
    protect_process()
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return _run_subcommand(argv[0], argv[1:])
        args = build_parser().parse_args(argv)
        # A headless run builds its method once, in its assembly; a TUI run checks it here, before a screen opens.
        settings = settings_from_args(args, build=not args.headless)
        problem = read_problem(args)
        check_save_path(args.save)
        if args.json and not args.headless:
            fail("--json goes with --headless")
        if args.expect is not None and not args.headless:
            fail("--expect goes with --headless")
        if args.control is not None and not args.headless:
            fail("--control goes with --headless")
        if args.control == "-" and (args.problem == "-" or args.file == Path("-")):
            fail("--control - and the problem cannot both come from stdin: put one of them in a file")
        if args.headless:
            from .headless import run_headless

            if problem is None:
                from core.demo.scripts import DEMO_PROBLEMS

                if not args.demo:
                    fail('--headless needs a problem: swarm-tui --headless "PROBLEM" (or -f FILE, or - for stdin)')
                problem = DEMO_PROBLEMS[settings.domain]
            return run_headless(
                problem, settings, demo=args.demo, json_lines=args.json, save=args.save, expect=args.expect,
                control=args.control,
            )
        if problem is None and args.demo:  # the demo brings its own problem: run it at once, no form to fill
            from core.demo.scripts import DEMO_PROBLEMS

            problem = DEMO_PROBLEMS[settings.domain]
        return OpenRun(problem, settings, demo=args.demo, save=args.save, step=args.step)
    except KeyboardInterrupt:
        print("swarm-tui: interrupted", file=sys.stderr)
        return 130
    except CliError as exc:
        fail(str(exc))


def _run_subcommand(name: str, argv: list[str]) -> Outcome:
    if name == "bench":
        from .bench import main as bench_main

        return bench_main(argv)
    if name == "compare":
        from .compare import main as compare_main

        return compare_main(argv)
    if name == "train":
        from .train import main as train_main

        return train_main(argv)
    if name == "teams":
        from .teams import main as teams_main

        return teams_main(argv)
    if name == "strategies":
        from .strategies import main as strategies_main

        return strategies_main(argv)
    if name == "mcp":
        from .mcp import main as mcp_main

        return mcp_main(argv)
    if name == "setup":
        from .setup import main as setup_main

        return setup_main(argv)
    if name == "serve":
        from .serve import main as serve_main

        return serve_main(argv)
    if name == "attach":
        from .attach import main as attach_main

        return attach_main(argv)
    from .sessions import main as sessions_main

    return sessions_main(name, argv)

