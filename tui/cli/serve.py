"""``swarm-tui serve [RUN ARGS…]``: the TUI in a browser, through textual-serve (the ``web`` extra).

Each browser that opens the page gets its own process of ``swarm-tui RUN ARGS…`` (a run, ``--demo``,
``replay FILE``, or ``attach TASK_ID|FILE``: every browser then follows the one run another process is
writing, which is how several people watch the same run, read-only with ``--spectate``). Bound to 127.0.0.1
unless ``--host`` says otherwise; then it says who can reach it, since whoever opens the page drives a run
against the configured endpoint. ``--spectate`` makes the view read-only (tui.spectate).
"""

from __future__ import annotations

import ipaddress
import re
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from core.demo.scripts import DEMO_PROBLEMS

from .options import EXIT_USAGE, OneLineParser, check_save_path, fail, read_problem, settings_from_args
from .run_parser import SUBCOMMANDS
from .run_parser import build_parser as run_parser

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


def command(run_args: Sequence[str], spectate: bool) -> str:
    """The shell command textual-serve starts per browser: this Python, this package, the run's arguments."""
    line = shlex.join([sys.executable, "-m", "tui", *run_args])
    return f"{SPECTATE_ENV}=1 {line}" if spectate else line


_WEB_FONT = re.compile(r"<link[^>]*fonts\.googleapis\.com[^>]*>", re.DOTALL)
# textual-serve's page asks a font service for its font; it ships the same font: the page takes that instead,
# so opening the app loads nothing from anywhere but this server.
_LOCAL_FONT = ('<style>@font-face{font-family:"Roboto Mono";'
               'src:url("/static/fonts/RobotoMono-VariableFont_wght.ttf") format("truetype")}</style>')


def local_fonts(page: str) -> str:
    return _WEB_FONT.sub(_LOCAL_FONT, page)


def _server(command_line: str, host: str, port: int, title: str, public_url: str | None) -> Any:
    from aiohttp import web
    from textual_serve.server import Server

    @web.middleware
    async def no_web_font(request: web.Request, handler: Any) -> web.StreamResponse:
        response: web.StreamResponse = await handler(request)
        if request.path == "/" and isinstance(response, web.Response) and response.text:
            response.text = local_fonts(response.text)
        return response

    class LocalServer(Server):
        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(no_web_font)
            return app

    return LocalServer(command_line, host=host, port=port, title=title, public_url=public_url)


def main(argv: list[str]) -> int:
    args, run_args = build_parser().parse_known_args(argv)
    if not 0 < args.port < 65536:
        fail(f"--port {args.port} is not a port (1..65535)")
    run_args = check_run(run_args, args.spectate)
    try:
        import textual_serve.server  # noqa: F401  (the web extra)
    except ImportError:
        print("swarm-tui: error: serve needs the web extra: pip install 'swarm-tui[web]'", file=sys.stderr)
        return EXIT_USAGE
    who = reach(args.host, args.port)
    if who is not None:
        drive = ("they watch read-only (--spectate)" if args.spectate else
                 "each of them drives a run against your endpoint (add --spectate for a read-only view)")
        print(f"swarm-tui serve: listening on {args.host}:{args.port}: {who}; {drive}", file=sys.stderr)
    server = _server(command(run_args, args.spectate), args.host, args.port,
                     "swarm-tui" + (" (spectating)" if args.spectate else ""), args.public_url)
    server.serve()
    return 0
