"""A comparison: one run per method on the same problem, endpoint, model and team, sharing one backend
(one client, one demo server) and one MiniLM, at most ``parallel`` at a time.

Each method's run is an ordinary session (``NAME/METHOD.json``) and the comparison a record beside it
(core.sessions.compare_record), saved when it starts, whenever a method ends and at the end, so a killed
process loses no finished run. A method that cannot start or crashes ends its own row with the reason;
the others go on. The headless CLI, the compare screen and the MCP server all run comparisons here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from core.compose.assembly import RunIO, open_run
from core.compose.control_feed import ControlScript
from core.compose.plan import RunPlan
from core.compose.runner import Backend
from core.evaluation.math_answers import answer_or_text, answers_equivalent
from core.llm.embeddings import Embedder
from core.llm.prices import cost_cell
from core.llm.tokens import cached_share
from core.methods.catalogue import get_method_info
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.control import ControlStatus
from core.runtime.dispatch import EventTable, is_delta
from core.runtime.outcome import EndReason
from core.sessions.compare_record import CompareRecord, CompareRow, RowState, record_paths, save_record, sessions_folder
from core.sessions.store import SessionRecorder

SinkFactory = Callable[[str], list[ev.EventSink]]  # method name -> extra sinks for its run's events

NO_VERDICT = "no verdict"
NO_ANSWER = "no answer"


@dataclass
class ComparePlan:
    problem: str
    settings: Settings  # shared by every run: endpoint, model, team, domain, rounds, budgets
    methods: list[str]
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # per method: config table, then -o
    parallel: int | None = None  # at most this many runs at once (None: all)
    expect: str | None = None  # math: the verdict compares each answer to it
    step: bool = False  # every run starts in step mode (the compare screen's lockstep)
    _plans: dict[str, RunPlan] = field(default_factory=dict, init=False, repr=False, compare=False)

    def settings_for(self, method: str) -> Settings:
        options = self.options.get(method) or {}
        return replace(
            self.settings, strategy=method,
            strategy_options={**self.settings.strategy_options, method: options} if options else
            self.settings.strategy_options,
        )

    def check(self) -> None:
        """Every method exists and takes its options: MethodError (one line) now, not mid-comparison. The
        run plans made here are the ones the comparison then opens (take_plans)."""
        self._plans = self._make_plans()

    def _make_plans(self) -> dict[str, RunPlan]:
        plans: dict[str, RunPlan] = {}
        team = None
        for method in self.methods:  # one team for every run, resolved once
            plans[method] = RunPlan.make(self.settings_for(method), team=team)
            team = plans[method].team
        return plans

    def take_plans(self) -> dict[str, RunPlan]:
        """Each method's run plan: check()'s, else made now. Taken once: a method object serves one run."""
        plans, self._plans = self._plans or self._make_plans(), {}
        return plans


# What a compare row takes from each event (RowTracker's ``@ROW_FOLDS.on`` methods); any other event but a
# token delta only moves the row's wall time on.
ROW_FOLDS: EventTable[RowTracker] = EventTable()


class RowTracker:
    """An event sink folding one method's events into its summary row as they happen."""

    def __init__(self, row: CompareRow, clock: Callable[[], float] = time.monotonic) -> None:
        self.row = row
        self.clock = clock
        self.started_at: float | None = None
        self.last_test: ev.TestRun | None = None
        self.finished: ev.RunFinished | None = None
        self.paused_since: float | None = None  # a stepped run waiting for its next step, since then

    def __call__(self, event: ev.Event) -> None:
        if is_delta(event):
            return
        ROW_FOLDS.dispatch(self, event)
        row = self.row
        if self.started_at is not None:
            paused_s = row.paused_s + (self.clock() - self.paused_since if self.paused_since is not None else 0.0)
            row.wall_s = round(max(0.0, self.clock() - self.started_at - paused_s), 3)

    @ROW_FOLDS.on(ev.RunStarted)
    def _started(self, event: ev.RunStarted) -> None:
        self.started_at = self.clock()
        self.row.state = RowState.RUNNING

    @ROW_FOLDS.on(ev.AgentFinished)
    def _call(self, event: ev.AgentFinished) -> None:
        row = self.row
        row.calls += 1  # the headless contract: calls == this method's agent_finished events
        row.prompt_tokens += event.prompt_tokens
        row.completion_tokens += event.completion_tokens
        if event.cached_tokens is not None:
            row.cached_tokens = (row.cached_tokens or 0) + event.cached_tokens

    @ROW_FOLDS.on(ev.RoundFinished)
    def _round(self, event: ev.RoundFinished) -> None:
        self.row.rounds = event.round
        self.row.prompt_tokens, self.row.completion_tokens = event.prompt_tokens, event.completion_tokens

    @ROW_FOLDS.on(ev.TestRun)
    def _tested(self, event: ev.TestRun) -> None:
        self.last_test = event

    @ROW_FOLDS.on(ev.ControlChanged)
    def _control(self, event: ev.ControlChanged) -> None:
        """The time a stepped run sits paused is not its work."""
        paused = event.status == ControlStatus.PAUSED
        if paused and self.paused_since is None:
            self.paused_since = self.clock()
        elif not paused and self.paused_since is not None:
            self.row.paused_s = round(self.row.paused_s + self.clock() - self.paused_since, 3)
            self.paused_since = None

    @ROW_FOLDS.on(ev.UserSteered)
    def _steered(self, event: ev.UserSteered) -> None:
        self.row.steered += 1 if event.accepted else 0
        self.row.steer_refused += 0 if event.accepted else 1

    @ROW_FOLDS.on(ev.RunFinished)
    def _finished(self, event: ev.RunFinished) -> None:
        row = self.row
        self.finished = event
        row.rounds = event.rounds
        row.prompt_tokens, row.completion_tokens = event.prompt_tokens, event.completion_tokens
        row.tokens_estimated = event.tokens_estimated
        row.cached_tokens = event.cached_tokens
        row.cost_usd, row.cost_unknown, row.cost_local = event.cost_usd, list(event.cost_unknown), event.cost_local
        row.replies_copied = event.replies_copied
        row.answer = event.final_answer
        row.reason = event.reason
        row.state = (RowState.FAILED if event.reason == EndReason.ERROR else RowState.CANCELLED
                     if event.reason == EndReason.CANCELLED else RowState.DONE)
        if event.reason == EndReason.ERROR:
            row.reason = event.detail or "error"


def verdict_for(tracker: RowTracker, domain: str, expect: str | None) -> str:
    """What the comparison can say about a finished run's answer: tests passed/failed (code with tests
    run), equal or not to --expect (math equivalence), else "no verdict" — never a guess."""
    row = tracker.row
    if row.state == RowState.FAILED:
        return "failed"
    if not row.answer.strip():
        return NO_ANSWER
    finished = tracker.finished
    if finished is not None and finished.demo_played:  # the scripted server played its own problem, not this one
        return f"{NO_VERDICT}: the demo played {finished.demo_played}"
    if expect is not None:
        equal = answers_equivalent(answer_or_text(row.answer), expect)
        return "matches expected" if equal else "does not match expected"
    if domain == "code" and tracker.last_test is not None:
        test = tracker.last_test
        return "tests passed" if test.passed else f"tests failed ({test.outcome})"
    return NO_VERDICT


class Comparison:
    """Runs a ComparePlan on an open backend; ``controls`` pause, step and cancel each run."""

    def __init__(
        self,
        plan: ComparePlan,
        backend: Backend,
        embedder: Embedder,
        *,
        sessions_dir: Path,
        record_path: Path | None = None,
        sinks_for: SinkFactory | None = None,
        on_row: Callable[[CompareRow], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        steering: ControlScript | None = None,
    ) -> None:
        self.plan = plan
        self.steering = steering  # --control: the same steering script for every method's run
        self.backend = backend
        self.embedder = embedder
        self.sinks_for = sinks_for or (lambda _method: [])
        self.on_row = on_row  # a run ended (its row is final)
        self.clock = clock
        now = time.time()
        if record_path is None:
            record_path, folder = record_paths(Path(sessions_dir), plan.problem, plan.settings.domain, now)
        else:
            folder = sessions_folder(record_path)
        self.record_path, self.folder = Path(record_path), folder
        self.rows = {m: CompareRow(m) for m in plan.methods}
        self.trackers = {m: RowTracker(self.rows[m], clock) for m in plan.methods}
        self.plans = plan.take_plans()
        self.controls = {m: self.plans[m].new_control(step=plan.step) for m in plan.methods}
        self.recorders: dict[str, SessionRecorder] = {}
        self.save_error = ""
        self.cancelled = False
        self.record = CompareRecord(
            problem=plan.problem, domain=plan.settings.domain, model=backend.model, base_url=backend.base_url,
            demo=backend.demo,
            options={m: get_method_info(m).resolve(plan.options.get(m)) for m in plan.methods},
            settings=shared_settings(plan), rows=list(self.rows.values()), created=now,
        )

    @property
    def failed(self) -> list[CompareRow]:
        return [row for row in self.rows.values() if row.state == RowState.FAILED]

    def cancel(self) -> None:
        """Stop every run (their sessions so far are kept); runs not started yet do not start."""
        self.cancelled = True
        for control in self.controls.values():
            control.cancel()

    async def run(self) -> CompareRecord:
        self.save()
        limit = asyncio.Semaphore(self.plan.parallel or len(self.plan.methods))

        async def one(method: str) -> None:
            async with limit:
                await self._run_one(method)
            self.save()
            if self.on_row is not None:
                self.on_row(self.rows[method])

        await asyncio.gather(*(one(m) for m in self.plan.methods))
        self.save()
        return self.record

    async def _run_one(self, method: str) -> None:
        row, tracker = self.rows[method], self.trackers[method]
        if self.cancelled:
            row.state, row.reason = RowState.CANCELLED, "cancelled before it started"
            return
        settings = self.plans[method].settings
        recorder = SessionRecorder(self.folder, path=self.folder / f"{method}.json")
        self.recorders[method] = recorder
        io = RunIO(sinks=[tracker, *self.sinks_for(method)], recorder=recorder, control=self.controls[method],
                   backend=self.backend, embedder=self.embedder, steering=self.steering)
        try:
            async with open_run(self.plans[method], self.plan.problem, io) as run:
                await run.run()
        except Exception as exc:  # one method's crash ends its own row, never the comparison
            row.state, row.reason = RowState.FAILED, f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        if recorder.path is not None and recorder.saves:
            row.session = str(recorder.path.relative_to(self.record_path.parent))
        if recorder.error:
            self.save_error = recorder.error
        if not row.state.ended:  # ended without a run_finished (a crash mid-run)
            row.state = RowState.FAILED
        row.verdict = await asyncio.to_thread(verdict_for, tracker, settings.domain, self.plan.expect)

    def save(self) -> bool:
        try:
            save_record(self.record, self.record_path)
        except OSError as exc:
            self.save_error = f"cannot save the comparison to {self.record_path}: {exc.strerror or exc}"
            return False
        return True


def shared_settings(plan: ComparePlan) -> dict[str, Any]:
    """The run settings every method shared, as the record and the exports show them."""
    s = plan.settings
    values: dict[str, Any] = {
        "team": s.team or s.domain, "protocol": s.protocol, "max_rounds": s.max_rounds, "tau": s.tau,
        "k_in": s.k_in, "max_concurrency": s.max_concurrency, "parallel": plan.parallel or len(plan.methods),
        "time_budget": s.time_budget, "max_calls": s.max_calls, "max_tokens": s.max_tokens, "max_cost": s.max_cost,
    }
    if plan.expect is not None:
        values["expect"] = plan.expect
    return {k: v for k, v in values.items() if v is not None}


def answer_gist(answer: str) -> str:
    """An answer on one line for a summary cell: code fences dropped, whitespace collapsed."""
    lines = [line for line in answer.strip().splitlines() if not line.strip().startswith("```")]
    return " ".join(" ".join(lines).split())


def percent_change(value: float, first: float) -> str:
    """The difference to the first column, as the summary shows it: "+12%", "-40%", "±0%", "—" (no base)."""
    if first <= 0:
        return "—"
    change = round((value - first) / first * 100)
    return "±0%" if change == 0 else f"{change:+d}%"


ESTIMATED_MARK = "~"


def estimated_note(rows: Sequence[CompareRow]) -> str:
    """The footnote the summary's "~" points to: which methods' tokens hold estimates, and why; "" if none."""
    marked = [f"{row.method} {row.tokens_estimated:,} of {row.total_tokens:,}" for row in rows if row.tokens_estimated]
    if not marked:
        return ""
    return (f"{ESTIMATED_MARK} tokens include estimates ({'; '.join(marked)}): calls cut off in flight by the time "
            "budget or a cancel, or a server that reports no usage")


def summary_rows(rows: Sequence[CompareRow]) -> list[dict[str, Any]]:
    """The summary table's rows: the contract fields plus total tokens and the % differences to the first;
    ``tokens_mark`` is "~" for a row whose tokens hold estimates (see estimated_note), else ""; ``cached`` the
    prompt tokens the server served from its prefix cache ("cached N (x %)", or "not reported"); ``cost`` what the
    run's calls cost (core.llm.prices.cost_cell)."""
    if not rows:
        return []
    first = rows[0]
    out = []
    for row in rows:
        data = row.contract()
        data["total_tokens"] = row.total_tokens
        data["tokens_mark"] = ESTIMATED_MARK if row.tokens_estimated else ""
        data["cached"] = cached_share(row.cached_tokens, row.prompt_tokens)
        data["cost"] = cost_cell(row.cost_usd, row.cost_unknown, row.cost_local)
        if row.replies_copied:  # said where the end is: the run's replies were the template, not work
            data["reason"] = f"{data.get('reason', '')} ({row.replies_copied} copied the reply template)".strip()
        data["tokens_vs_first"] = percent_change(row.total_tokens, first.total_tokens)
        data["wall_vs_first"] = percent_change(row.wall_s, first.wall_s)
        out.append(data)
    return out
