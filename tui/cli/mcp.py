"""``swarm-tui mcp``: the MCP server (core.mcp) over stdio (default) or streamable HTTP.

stdio: the client starts this process; stdout carries only the protocol, every log line goes to
stderr. ``--http``: http://HOST:PORT/mcp, loopback by default. Run options (--base-url, --model,
--api-key-env, --config, --demo, ...) say which endpoint the swarms use. Without the optional ``mcp``
extra the command says how to get it (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .options import OneLineParser, add_run_options, fail, int_range, settings_from_args

DEFAULT_PORT = 8765
INSTALL_HINT = "pip install 'swarm-tui[mcp]' (the MCP Python SDK, mcp>=1.29,<2)"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="swarm-tui mcp",
        description="Serve swarm_start / swarm_status / swarm_result / swarm_cancel to MCP clients "
        "(coding assistants). stdio by default; --http for streamable HTTP.",
    )
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp")
    parser.add_argument("--host", default="127.0.0.1", help="with --http: address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int_range(1, 65535), default=DEFAULT_PORT,
                        help=f"with --http: port (default {DEFAULT_PORT})")
    parser.add_argument("--sessions-dir", dest="sessions_dir", type=Path,
                        help="where runs are saved (default: the configured sessions folder)")
    parser.add_argument("--round-budget", dest="round_budget", type=float, default=None, metavar="SECONDS",
                        help="wall-clock budget per round; a run gets max_rounds x this (default 120)")
    parser.add_argument("--demo-delay", dest="demo_delay", type=float, default=0.02, help=argparse.SUPPRESS)
    add_run_options(parser)
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    settings = settings_from_args(args)
    if args.sessions_dir is not None:
        settings = settings.with_overrides(sessions_dir=str(args.sessions_dir))
    if args.round_budget is not None and not 1 <= args.round_budget <= 3600:
        fail(f"--round-budget must be between 1 and 3600 seconds, got {args.round_budget:g}")
    if (args.host != "127.0.0.1" or args.port != DEFAULT_PORT) and not args.http:
        fail("--host and --port go with --http")
    try:
        import anyio
        from mcp.server.fastmcp import FastMCP  # noqa: F401 - the v1 API this server is written for
    except ImportError:
        fail(f"the MCP server needs the MCP SDK: {INSTALL_HINT}")

    from core.compose.plan import BackendChoice
    from core.mcp.server import build_server, quiet_logging, serve_http, serve_stdio
    from core.mcp.tasks import ROUND_BUDGET_S, SwarmManager

    manager = SwarmManager(settings, backend=BackendChoice(demo=args.demo, demo_chunk_delay=max(0.0, args.demo_delay)),
                           round_budget_s=args.round_budget or ROUND_BUDGET_S)
    server = build_server(manager, host=args.host, port=args.port)
    quiet_logging()
    where = f"sessions in {manager.sessions_dir}" + (" · DEMO (scripted model server)" if args.demo else "")
    try:
        if args.http:
            if args.host not in LOOPBACK:
                print(f"swarm-tui: warning: serving on {args.host}, not loopback, with no authentication: anyone "
                      "who can reach it can start swarms", file=sys.stderr)
            print(f"swarm-tui MCP server: http://{args.host}:{args.port}/mcp · {where}", file=sys.stderr)
            anyio.run(serve_http, server, manager)
        else:
            print(f"swarm-tui MCP server on stdio · {where}", file=sys.stderr)
            anyio.run(serve_stdio, server, manager)
    except KeyboardInterrupt:
        return 130
    return 0
