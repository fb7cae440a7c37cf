"""``swarm-tui serve [RUN ARGS…]``: the TUI in a browser, through textual-serve (the ``web`` extra).

Each browser that opens the page gets its own process of ``swarm-tui RUN ARGS…`` (a run, ``--demo``,
``replay FILE``, or ``attach TASK_ID|FILE``: every browser then follows the one run another process is
writing, which is how several people watch the same run, read-only with ``--spectate``). Bound to 127.0.0.1
unless ``--host`` says otherwise; then it says who can reach it, since whoever opens the page drives a run
against the configured endpoint. ``--spectate`` makes the view read-only (tui.spectate).
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import sys
from collections.abc import Mapping, Sequence

from core.demo.scripts import DEMO_PROBLEMS

from .options import EXIT_USAGE, OneLineParser, check_save_path, fail, int_range, read_problem, settings_from_args
from .run_parser import SUBCOMMANDS
from .run_parser import build_parser as run_parser
from .serve_gate import Gate, new_token, page_origins, say

# How the served process learns it is read-only (tui.spectate reads it): textual-serve starts it from a
# command line per browser, so the environment is the one channel.
SPECTATE_ENV = "SWARM_TUI_SPECTATE"
LOOPBACK = "127.0.0.1"
# Subcommands that open the TUI; every other one prints and ends. ``attach`` is how many people watch one run:
# each browser's process follows the same session log that the run (a headless run, MCP, a TUI) writes.
SERVABLE = ("replay", "attach")


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="swarm-tui serve", allow_abbrev=False,
        description="The TUI in a browser (textual-serve). Every other argument is a run's, as for swarm-tui "
        "itself: a problem, --demo, options, replay FILE, or attach TASK_ID|FILE (every browser watches the "
        "same run another process writes).",
        epilog="Needs the web extra: pip install 'swarm-tui[web]'.",
    )
    parser.add_argument("--host", default=LOOPBACK,
                        help=f"address to listen on (default {LOOPBACK}: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--public-url", metavar="URL",
                        help="the address browsers use to reach the page, when it is not http://HOST:PORT")
    parser.add_argument("--max-sessions", type=int_range(1, 64), default=4, metavar="N",
                        help="browser sessions open at once, each its own app process (default 4); the next "
                        "page says they are all in use")
    parser.add_argument("--spectate", action="store_true",
                        help="read-only: the keys that change the run (step, tau, k_in, steering, cancel) are off")
    return parser


def reach(host: str, port: int) -> str | None:
    """Who can open the page, when that is more than this machine; None for a loopback address."""
    if host == "localhost":
        return None
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return f"anyone who can reach {host} on port {port} can open the page"
    if address.is_loopback:
        return None
    if address.is_unspecified:
        return f"every network interface: anyone who can reach this machine on port {port} can open the page"
    return f"anyone who can reach {host} on port {port} can open the page"


def check_run(run_args: list[str], spectate: bool) -> list[str]:
    """The run's arguments, checked here so a mistake is one line now, not a broken page later; ``--demo``
    without a problem runs the domain's demo problem at once (a page that opens on a run, not on the form)."""
    if run_args and run_args[0] in SUBCOMMANDS:
        if run_args[0] not in SERVABLE:
            fail(f"serve opens the TUI: a run or replay FILE, not {run_args[0]}")
        if len(run_args) < 2:
            fail(f"serve {run_args[0]} needs a session file" + (" or a task id" if run_args[0] == "attach" else ""))
        return run_args
    args = run_parser().parse_args(run_args)
    settings = settings_from_args(args)
    problem = read_problem(args)
    check_save_path(args.save)
    if args.headless or args.json:
        fail("serve shows the TUI: --headless and --json do not go with it")
    if spectate and args.step:
        fail("--spectate with --step would wait for a key no spectator may press")
    if spectate and problem is None and not args.demo:
        fail("--spectate needs a run to watch: a problem, -f FILE, --demo, or replay FILE")
    if problem is None and args.demo:
        return [*run_args, DEMO_PROBLEMS[settings.domain]]
    return run_args


def safe_pythonpath(environ: Mapping[str, str]) -> str:
    """PYTHONPATH for the served app: the absolute folders the user named. An empty or relative entry means
    "wherever the app runs", i.e. the working folder, and is dropped (so is nothing else)."""
    entries = environ.get("PYTHONPATH", "").split(os.pathsep)
    return os.pathsep.join(e for e in entries if e and os.path.isabs(e))


def command(run_args: Sequence[str], spectate: bool, environ: Mapping[str, str] | None = None) -> str:
    """The shell command textual-serve starts per browser: this Python, the installed package, the run's
    arguments. Started as the console script starts it: ``-P`` keeps the working folder off the import path
    (a ``tui/`` or ``sessions/`` there would otherwise be imported instead of the app: code run with the
    user's rights and key), and PYTHONSAFEPATH=1 does the same for every Python the app itself starts."""
    path = safe_pythonpath(os.environ if environ is None else environ)
    assignments = ["PYTHONSAFEPATH=1", f"PYTHONPATH={shlex.quote(path)}" if path else "PYTHONPATH="]
    if spectate:
        assignments.append(f"{SPECTATE_ENV}=1")
    return " ".join([*assignments, shlex.join([sys.executable, "-P", "-m", "tui", *run_args])])


def public_url_of(host: str, port: int) -> str:
    """Where a browser finds the page when --public-url does not say: http://HOST:PORT."""
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}"


def unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def startup_notes(host: str, port: int, spectate: bool, public_url: str | None) -> list[str]:
    """What the person starting the server should know: who can reach it, and an address no browser can use."""
    notes = []
    who = reach(host, port)
    if who is not None:
        drive = ("they watch read-only (--spectate)" if spectate else
                 "each of them drives a run against your endpoint (add --spectate for a read-only view)")
        notes.append(f"listening on {host}:{port}: {who}; {drive}; the address below carries the token they need")
    if unspecified(host) and public_url is None:
        notes.append(f"the page will point its connection at ws://{host}:{port}, which no browser can reach: "
                     f"--public-url http://THIS-MACHINE:{port} (the address browsers use) fixes it")
    return notes


def main(argv: list[str]) -> int:
    args, run_args = build_parser().parse_known_args(argv)
    if not 0 < args.port < 65536:
        fail(f"--port {args.port} is not a port (1..65535)")
    run_args = check_run(run_args, args.spectate)
    try:
        from .serve_server import GatedServer  # the web extra
    except ImportError:
        print("swarm-tui: error: serve needs the web extra: pip install 'swarm-tui[web]'", file=sys.stderr)
        return EXIT_USAGE
    public_url = args.public_url or public_url_of(args.host, args.port)
    loopback = reach(args.host, args.port) is None
    gate = Gate(page_origins(public_url, args.port, loopback), args.max_sessions,
                token=None if loopback else new_token(), secure=public_url.startswith("https:"), port=args.port)
    for note in startup_notes(args.host, args.port, args.spectate, args.public_url):
        say(note)
    server = GatedServer(command(run_args, args.spectate), host=args.host, port=args.port, public_url=public_url,
                         title="swarm-tui" + (" (spectating)" if args.spectate else ""), gate=gate)
    try:
        server.serve()
    except OSError as exc:
        fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    return 0
