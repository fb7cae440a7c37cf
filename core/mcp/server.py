"""The MCP server: six tools (swarm_start, swarm_compare, swarm_status, swarm_result, swarm_cancel, swarm_steer)
over stdio or streamable HTTP, on top of core.mcp.tasks.

Needs the optional ``mcp`` extra (the official Python SDK, v1 FastMCP API); it is imported inside
build_server() and the transport functions, so this module imports without it. stdout is the wire in
stdio mode: nothing else may reach it (see serve_stdio), and every log line goes to stderr.
"""

# No `from __future__ import annotations` here: the tools' annotations use values of build_server's
# scope (the server's defaults), and FastMCP reads them when the tools are registered.
import asyncio
import contextlib
import io
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from core import __version__
from core.mcp.results import (
    CancelResult,
    RunResult,
    StartResult,
    StatusResult,
    SteerResult,
    cancel_result,
    result_result,
    start_result,
    status_result,
    steer_result,
)
from core.mcp.start_request import MAX_CONTEXT_CHARS, OPTIONS, StartError
from core.mcp.tasks import STRATEGIES, SwarmManager
from core.methods.catalogue import option_schemas
from core.runtime.config import DEFAULT_STRATEGY, DOMAINS, bounds_text, schema_bounds
from core.runtime.rosters import Team
from core.runtime.steering import SteerError, SteerKind

if TYPE_CHECKING:
    from mcp.server.fastmcp import FastMCP

SERVER_NAME = "swarm-tui"
INSTRUCTIONS = (
    "Runs LLM agent swarms (a Manager and role workers whose communication graph is rebuilt every round, "
    "DyTopo, or a baseline topology) on a problem. swarm_start returns a task id at once; poll swarm_status "
    "at the suggested interval until it is no longer running, then call swarm_result (include_topology for "
    "every round's graph). swarm_start's team picks a team by name (its description lists the teams with "
    "their domain and agents). swarm_cancel stops a run; swarm_steer steers a running one (a note to an agent, "
    "a new goal, a pinned or cut edge, ...). The user can watch a run live with "
    "`swarm-tui attach TASK_ID`."
)


def team_help(teams: dict[str, Team]) -> str:
    """swarm_start's team description: every team a client may name (the list, like the strategies', is
    in the schema; the server's teams are fixed for its lifetime)."""
    listed = "; ".join(
        f"{name} ({team.name}, {team.manager.name} + {len(team.workers)} workers: {', '.join(team.worker_names)})"
        for name, team in teams.items()
    )
    return (
        f"the team, by name (default: the built-in team of the domain; a team sets the domain): {listed}. "
        "Names only: the server reads no team files"
    )


def build_server(manager: SwarmManager, *, host: str = "127.0.0.1", port: int = 8000,
                 log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING") -> Any:
    """A FastMCP server whose tools drive ``manager``."""
    from mcp.server.fastmcp import FastMCP

    server = FastMCP(SERVER_NAME, instructions=INSTRUCTIONS, host=host, port=port, log_level=log_level)
    server._mcp_server.version = __version__  # the initialize reply names swarm-tui's version, not the SDK's
    _add_start(server, manager)
    _add_compare(server, manager)
    _add_watch(server, manager)
    _add_steer(server, manager)
    return server


def _lookup(manager: SwarmManager, task_id: str) -> Any:
    """The task, or the tool's error naming the unknown id."""
    from mcp.server.fastmcp.exceptions import ToolError

    from core.mcp.tasks import UnknownTask

    try:
        return manager.get(task_id)
    except UnknownTask as exc:
        raise ToolError(str(exc)) from None


def _add_start(server: "FastMCP", manager: SwarmManager) -> None:
    """swarm_start."""
    from mcp.server.fastmcp.exceptions import ToolError

    # The published defaults are the server's settings (the usual ones unless its flags or config say
    # otherwise): domain code, tau 0.3, k_in 3 (N-1 for a smaller team), max_rounds 5. domain defaults to
    # None so that a domain the client gives can be checked against its team.
    defaults = manager.settings

    @server.tool()
    async def swarm_start(
        task: Annotated[str, Field(description="the problem for the swarm to solve")],
        domain: Annotated[
            str | None,
            Field(description=f"the domain: {', '.join(DOMAINS)} (default {defaults.domain}; with team, leave it out: "
                  "the team sets it)"),
        ] = None,
        team: Annotated[str | None, Field(description=team_help(manager.team_choices()))] = None,
        strategy: Annotated[
            str, Field(description=f"how the team is wired: {', '.join(STRATEGIES)}")
        ] = DEFAULT_STRATEGY,
        # The bounds are published in the schema and checked by the settings model (SwarmManager.validate):
        # a bad value is refused with the message the command line and the config file give.
        tau: Annotated[
            float, Field(json_schema_extra=schema_bounds("tau"),
                         description="routing threshold: 0.2 dense, 0.3, 0.5 sparse")
        ] = defaults.tau,
        k_in: Annotated[
            int | None,
            Field(json_schema_extra=schema_bounds("k_in"),
                  description=f"max inbound edges per agent, 1..N-1 of the chosen team's N workers (default "
                  f"{defaults.k_in}, or N-1 for a smaller team)"),
        ] = None,
        max_rounds: Annotated[
            int, Field(json_schema_extra=schema_bounds("max_rounds"), description=bounds_text("max_rounds"))
        ] = defaults.max_rounds,
        context: Annotated[
            str, Field(description=f"extra material for the task, at most {MAX_CONTEXT_CHARS} characters")
        ] = "",
        options: Annotated[
            dict[str, Any] | None,
            Field(
                description="; ".join(f"{k}: {v}" for k, v in OPTIONS.items())
                + "; plus the chosen strategy's own options (their schemas, by strategy: x-strategy-options)",
                json_schema_extra={"x-strategy-options": option_schemas()},
            ),
        ] = None,
    ) -> StartResult:
        """Start a swarm on a task. Returns its task id at once; the run goes on in the background."""
        try:
            entry = manager.start(task, domain, strategy, tau, k_in, max_rounds, context, options, team=team)
        except StartError as exc:
            raise ToolError(str(exc)) from None
        return start_result(entry, str(manager.sessions_dir))


def _add_compare(server: "FastMCP", manager: SwarmManager) -> None:
    """swarm_compare."""
    from mcp.server.fastmcp.exceptions import ToolError

    defaults = manager.settings  # the published defaults are the server's settings

    @server.tool()
    async def swarm_compare(
        task: Annotated[str, Field(description="the problem every method solves")],
        strategies: Annotated[
            str, Field(description=f"the methods to compare, comma-separated, or all: {', '.join(STRATEGIES)}")
        ],
        domain: Annotated[str | None, Field(description=f"the domain: {', '.join(DOMAINS)}")] = None,
        team: Annotated[str | None, Field(description="a team by name (see swarm_start's team)")] = None,
        max_rounds: Annotated[
            int, Field(json_schema_extra=schema_bounds("max_rounds"), description=bounds_text("max_rounds"))
        ] = defaults.max_rounds,
        context: Annotated[str, Field(description=f"extra material, at most {MAX_CONTEXT_CHARS} characters")] = "",
        options: Annotated[
            dict[str, dict[str, Any]] | None,
            Field(description="each method's own options by method name, e.g. {\"dmoa\": {\"k\": 2}}"),
        ] = None,
        parallel: Annotated[
            int | None, Field(ge=1, le=10, description="methods run at once (default all; 1 is fairer on one "
                                                        "local GPU)")
        ] = None,
        time_budget: Annotated[
            float | None,
            Field(json_schema_extra=schema_bounds("time_budget"),
                  description=f"{bounds_text('time_budget')}, for each method's run from its own start: past "
                  "it the run "
                  "cancels its calls in flight and ends with reason budget and its best valid answer so far "
                  "(like --time-budget); what its cut-off calls cost is counted, as estimates (the row's "
                  "tokens_estimated)"),
        ] = None,
        max_calls: Annotated[
            int | None,
            Field(json_schema_extra=schema_bounds("max_calls"),
                  description=f"model calls, {bounds_text('max_calls')}, re-asks included, for each method's run: "
                  "past it the run "
                  "ends with reason budget (like --max-calls)"),
        ] = None,
        max_cost: Annotated[
            float | None,
            Field(json_schema_extra=schema_bounds("max_cost"),
                  description=f"US dollars, {bounds_text('max_cost')}, for each method's run: once its calls cost "
                  "that much it ends with reason budget (like --max-cost)"),
        ] = None,
    ) -> StartResult:
        """Run several methods on the same task, endpoint, model and team. Returns one task id at once:
        swarm_status sums their progress, swarm_result has a summary row per method. time_budget and
        max_calls bound every method's run alike (each row's reason says budget when one ended it)."""
        from core.mcp.compare_tasks import start_compare

        try:
            entry = start_compare(manager, task, strategies, domain, max_rounds, context, options, parallel,
                                  team=team, time_budget=time_budget, max_calls=max_calls, max_cost=max_cost)
        except StartError as exc:
            raise ToolError(str(exc)) from None
        return start_result(entry, str(manager.sessions_dir))


def _add_watch(server: "FastMCP", manager: SwarmManager) -> None:
    """swarm_status, swarm_result and swarm_cancel."""
    @server.tool()
    async def swarm_status(task_id: Annotated[str, Field(description="from swarm_start")]) -> StatusResult:
        """How a swarm is doing: running / completed / failed / cancelled, round, phase, active agents,
        elapsed time, LLM calls, tokens, and when to ask again."""
        return status_result(_lookup(manager, task_id))

    @server.tool()
    async def swarm_result(
        task_id: Annotated[str, Field(description="from swarm_start")],
        include_topology: Annotated[
            bool, Field(description="add every round's graph: edges with scores, order, tiers, goal")
        ] = False,
    ) -> RunResult:
        """A finished swarm's final answer, why it ended, rounds, tokens and wall time (a running swarm
        says it is still running)."""
        return result_result(_lookup(manager, task_id), include_topology)

    @server.tool()
    async def swarm_cancel(task_id: Annotated[str, Field(description="from swarm_start")]) -> CancelResult:
        """Stop a running swarm; its session so far is kept."""
        entry = _lookup(manager, task_id)
        entry, cancelled = manager.cancel(entry.id)
        return cancel_result(entry, cancelled)


def _add_steer(server: "FastMCP", manager: SwarmManager) -> None:
    """swarm_steer."""
    from mcp.server.fastmcp.exceptions import ToolError

    @server.tool()
    async def swarm_steer(
        task_id: Annotated[str, Field(description="from swarm_start")],
        action: Annotated[str, Field(description=f"one of {', '.join(k.value for k in SteerKind)}; which ones a "
                                     "run takes depends on its method (a refusal says why)")],
        to: Annotated[str | None, Field(description="note: the agent, or all")] = None,
        agent: Annotated[str | None, Field(description="silence, restore, retry, replace, force, exclude, "
                                           "agent: the agent")] = None,
        src: Annotated[str | None, Field(description="pin, cut, release, edge_add, edge_remove: the sender")] = None,
        dst: Annotated[str | None, Field(description="... the receiver")] = None,
        text: Annotated[str | None, Field(description="note, goal, replace: the text; plan: the YAML plan")] = None,
        when: Annotated[str | None, Field(description="note: next (its next call, default) or now (its call "
                                          "in flight is asked again with it)")] = None,
        rounds: Annotated[int | None, Field(description="pin, cut: for this many graphs (default: until "
                                            "released)")] = None,
        at_round: Annotated[int | None, Field(description="apply at the barrier before this round (default: "
                                              "the next barrier)")] = None,
        type: Annotated[str | None, Field(description="edge_add: conditioned, feedback or debate")] = None,
        model: Annotated[str | None, Field(description="agent: its new model")] = None,
        endpoint: Annotated[str | None, Field(description="agent: its new endpoint URL")] = None,
        temperature: Annotated[float | None, Field(description="agent: its new temperature")] = None,
    ) -> SteerResult:
        """Steer a running swarm started with swarm_start: the same actions, checks and events as the
        TUI and `--control` (docs/steering.md). The action waits for the run's next barrier (a phase
        boundary); swarm_status then lists it as taken or refused, with the reason."""
        given = {"action": action, "to": to, "agent": agent, "src": src, "dst": dst, "text": text, "when": when,
                 "rounds": rounds, "at_round": at_round, "type": type, "model": model, "endpoint": endpoint,
                 "temperature": temperature}
        entry = _lookup(manager, task_id)
        try:
            entry, taken = manager.steer(entry.id, {k: v for k, v in given.items() if v is not None})
        except SteerError as exc:
            raise ToolError(str(exc)) from None
        return steer_result(entry, taken)


# --- transports --------------------------------------------------------------------------------


class OneLineFormatter(logging.Formatter):
    """Log records as one line each on stderr: an exception is named, never printed as a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"swarm-tui mcp: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {' '.join(str(exc).split())})" if str(exc) else f" ({type(exc).__name__})"
        return " ".join(text.splitlines())


class _ClientGone(logging.Filter):
    """The SDK logs a client that hangs up on its event stream as an error; it is not one."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return type(exc).__name__ not in ("ClosedResourceError", "BrokenResourceError")


def quiet_logging(level: int = logging.WARNING) -> None:
    """Every log line to stderr, one line each (FastMCP installs a rich handler with tracebacks)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter())
    handler.addFilter(_ClientGone())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def stop_on_signals(manager: SwarmManager) -> None:
    """SIGINT / SIGTERM: stop the running swarms (each saves its session, ended as cancelled), then exit.
    (In HTTP mode uvicorn takes the signal first, shuts down, and passes it on to this.)"""
    loop = asyncio.get_running_loop()

    async def stop() -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(manager.aclose(), 30)
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(0)

    stopping: list[asyncio.Task[None]] = []

    def on_signal() -> None:
        if not stopping:
            stopping.append(loop.create_task(stop(), name="swarm-tui-stop"))

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal)


async def serve_stdio(server: "FastMCP", manager: SwarmManager) -> None:
    """Serve on the process's stdin/stdout. The protocol gets private copies of fds 0 and 1; fd 0
    becomes /dev/null and fd 1 a copy of stderr, and sys.stdout is stderr, so neither a stray print
    nor a child process (the code sandbox) can write into or read from the wire."""
    import anyio
    from mcp.server.stdio import stdio_server

    wire_in, wire_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stdin = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_in, "rb"), encoding="utf-8", errors="replace"))
    stdout = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8"))
    lowlevel = server._mcp_server  # what FastMCP.run_stdio_async runs, with our streams
    stop_on_signals(manager)
    manager.warm_up()
    try:
        async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    finally:
        await manager.aclose()


async def serve_http(server: "FastMCP", manager: SwarmManager) -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp until interrupted; running swarms are stopped
    (and their sessions saved) on the way out."""
    stop_on_signals(manager)
    manager.warm_up()
    try:
        await server.run_streamable_http_async()
    finally:
        with contextlib.suppress(Exception):
            await manager.aclose()
