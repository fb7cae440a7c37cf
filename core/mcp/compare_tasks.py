"""Comparisons behind the MCP tool ``swarm_compare``: several methods on one task, run as one task id.

A comparison is a SwarmTask like any other (swarm_status, swarm_result and swarm_cancel take its id); its
status sums the methods' calls and tokens, and its result holds one summary row per method (the rows of
``swarm-tui compare --headless --json``). It shares the server's backend and MiniLM with every swarm.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.compose.compare import ComparePlan, Comparison
from core.mcp.start_request import StartError
from core.mcp.tasks import SwarmManager, SwarmTask, TaskStatus, problem_text
from core.methods.registry import MethodError
from core.methods.selection import parse_strategies
from core.runtime import events as ev
from core.runtime.dispatch import is_delta
from core.sessions.compare_record import MAX_METHODS, RowState


class _CompareControl:
    """What a SwarmTask's cancel and budget call: they stop every method of the comparison."""

    def __init__(self, comparison: Comparison) -> None:
        self.comparison = comparison

    def cancel(self) -> None:
        self.comparison.cancel()


def _methods(strategies: Any) -> list[str]:
    text = ",".join(strategies) if isinstance(strategies, list | tuple) else strategies
    if not isinstance(text, str):
        raise StartError("strategies must be a list of method names or a text like \"dytopo,dmoa\" or \"all\"")
    try:
        methods = parse_strategies(text)
    except ValueError as exc:
        raise StartError(str(exc)) from None
    if not 2 <= len(methods) <= MAX_METHODS:
        raise StartError(f"a comparison runs 2 to {MAX_METHODS} methods, got {len(methods)}")
    return methods


def start_compare(
    manager: SwarmManager,
    task: Any,
    strategies: Any,
    domain: Any = None,
    max_rounds: Any = None,  # None: the server's settings
    context: Any = "",
    options: Mapping[str, Any] | None = None,
    parallel: Any = None,
    *,
    team: Any = None,
    time_budget: Any = None,
    max_calls: Any = None,
    max_cost: Any = None,
) -> SwarmTask:
    """Validate, schedule, and return the comparison's entry at once (StartError if refused).
    ``options``: {method: {option: value}}, each checked by its method; the server's [strategy.NAME] tables
    give the defaults, as for a single swarm. ``time_budget`` and ``max_calls`` bound every method's run,
    each from its own start, checked as swarm_start's options of those names."""
    if manager.closed:
        raise StartError("the server is shutting down")
    methods = _methods(strategies)
    if options is not None and not isinstance(options, Mapping):
        raise StartError("options must map a method name to its options, e.g. {\"dmoa\": {\"k\": 2}}")
    given = dict(options or {})
    unknown = [name for name in given if name not in methods]
    if unknown:
        raise StartError(f"options for {', '.join(unknown)}, which the comparison does not run")
    if parallel is not None and (isinstance(parallel, bool) or not isinstance(parallel, int)
                                 or not 1 <= parallel <= MAX_METHODS):
        raise StartError(f"parallel must be a whole number from 1 to {MAX_METHODS}")
    # The bounds go through swarm_start's own option check: the same limits and messages, and the run
    # settings every method's run is built from carry them.
    bounds = {k: v for k, v in (("time_budget", time_budget), ("max_calls", max_calls), ("max_cost", max_cost))
              if v is not None}
    first, checked, notes = manager.plan(task, domain, methods[0], None, None, max_rounds, context, bounds,
                                         team=team)
    settings, chosen = first.settings, first.team
    bounds = {k: checked[k] for k in bounds}
    per_method: dict[str, dict[str, Any]] = {}
    for method in methods:
        mine = given.get(method) or {}
        if not isinstance(mine, Mapping):
            raise StartError(f"options of {method} must be a table of option names and values")
        per_method[method] = {**(settings.strategy_options.get(method) or {}), **mine}
    entry = SwarmTask(
        id="", task=task.strip(), domain=settings.domain, strategy="compare: " + ",".join(methods),
        params={"tau": settings.tau, "k_in": settings.k_in, "max_rounds": settings.max_rounds},
        options={"methods": methods, "options": per_method, "parallel": parallel or len(methods), **bounds},
        context=str(context or ""), budget_s=manager.wall_budget(bounds, settings.max_rounds, len(methods)),
        notes=notes, team=chosen.team_name, agents=[chosen.manager.name, *chosen.worker_names],
        started_at=manager.clock(),
    )
    plan = ComparePlan(problem_text(entry), settings, methods, options=per_method, parallel=parallel)
    try:
        plan.check()
    except MethodError as exc:
        raise StartError(str(exc)) from None
    manager._make_room()
    entry.id = task_id = uuid.uuid4().hex[:12]
    manager.tasks[task_id] = entry
    entry.handle = asyncio.get_running_loop().create_task(_run(manager, entry, plan), name=f"compare-{task_id}")
    return entry


def _sync(entry: SwarmTask, comparison: Comparison) -> None:
    """The entry's status figures: the methods' rows summed (a comparison has no one round or phase)."""
    rows = list(comparison.rows.values())
    entry.llm_calls = sum(r.calls for r in rows)
    entry.prompt_tokens = sum(r.prompt_tokens for r in rows)
    entry.completion_tokens = sum(r.completion_tokens for r in rows)
    entry.round = max((r.rounds for r in rows), default=0)
    running = [r.method for r in rows if r.state == RowState.RUNNING]
    done = sum(r.state in (RowState.DONE, RowState.FAILED, RowState.CANCELLED) for r in rows)
    entry.phase = f"{done} of {len(rows)} methods ended" + (f"; running: {', '.join(running)}" if running else "")
    entry.compare_rows = [row.contract() for row in rows]


async def _run(manager: SwarmManager, entry: SwarmTask, plan: ComparePlan) -> None:
    """The comparison's asyncio task: never raises (except the server's own shutdown cancel)."""
    loop = asyncio.get_running_loop()
    timer = loop.call_later(entry.budget_s, manager._out_of_time, entry, [])
    try:
        entry.phase = "connecting"
        backend = await manager._open_backend()
        entry.phase = "loading embeddings"
        await manager.embedder.aload()

        def sync(event: ev.Event) -> None:
            if not is_delta(event):  # token deltas move no figure of the status
                _sync(entry, comparison)

        comparison = Comparison(plan, backend, manager.embedder, sessions_dir=Path(plan.settings.sessions_dir),
                                sinks_for=lambda _method: [sync])
        entry.control = _CompareControl(comparison)  # type: ignore[assignment]
        entry.session_path = comparison.record_path
        if entry.cancel_requested or entry.timed_out:
            comparison.cancel()
        await comparison.run()
        _sync(entry, comparison)
        if entry.timed_out:
            manager._fail(entry, f"timed out after {entry.budget_s:g} s")
        elif comparison.cancelled:
            entry.status = TaskStatus.CANCELLED
        elif all(row.state == RowState.FAILED for row in comparison.rows.values()):
            manager._fail(entry, "every method failed: " + "; ".join(
                f"{r.method}: {r.reason}" for r in comparison.rows.values()))
        else:
            entry.status = TaskStatus.COMPLETED
        entry.phase = "finished"
    except asyncio.CancelledError:
        if entry.cancel_requested:
            entry.status, entry.phase = TaskStatus.CANCELLED, "finished"
        else:
            manager._fail(entry, "the server shut down while the comparison was running")
            raise
    except Exception as exc:  # never into the server: the entry says what happened
        manager._fail(entry, str(exc).strip() or type(exc).__name__)
    finally:
        timer.cancel()
        entry.active = {}
        if entry.finished_at is None:
            entry.finished_at = manager.clock()
        if entry.status not in (TaskStatus.COMPLETED, TaskStatus.CANCELLED, TaskStatus.FAILED):
            manager._fail(entry, "the comparison stopped without a result")
