"""The benchmark runner: a dataset's problems through several topology strategies, scored, tabulated.

* Datasets: HumanEval-format JSONL (task_id, prompt, canonical_solution, test, entry_point) and
  MATH-format JSONL (problem, answer, ...), told apart by their fields. Each problem becomes a swarm
  task in its domain (code / math).
* Strategies: every registered method (core.methods): ``dytopo``, the baselines (``single``,
  ``single-turn``, ``random``, ``broadcast``, ``chain``, ``star``) and the other seed methods. Code
  tasks run with code execution on, against the problem's visible examples only; the dataset's
  hidden tests are used for scoring and never shown to the run.
* Scoring: HumanEval by running ``check(entry_point)`` on the final code in the sandbox; MATH by
  answer equivalence (math-verify).
* Output: one session per (problem, strategy), every finished row appended to ``results.jsonl`` at
  once (so a killed run loses nothing and ``resume`` skips it), and at the end ``results.csv`` (rows),
  ``summary.csv`` (per strategy) and ``results.json`` (both).
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from core.compose.assembly import RunIO, open_run
from core.compose.control_feed import ControlScript
from core.compose.plan import RunPlan, team_of
from core.compose.runner import Backend
from core.datasets.problems import Problem
from core.datasets.verdicts import score
from core.evaluation.sandbox import SandboxLimits
from core.llm.embeddings import Embedder
from core.llm.prices import cost_cell, usd_text
from core.llm.request_seed import REQUEST_SEED
from core.llm.tokens import cached_share
from core.methods.catalogue import build_method, get_method_info
from core.runtime import events as ev
from core.runtime.config import DomainName, Settings
from core.runtime.dispatch import is_delta, of_kind
from core.runtime.engine import Method
from core.runtime.rosters import Team, builtin_team
from core.sessions.store import SessionRecorder

ANSWER_CHARS = 4000  # how much of a final answer the JSON results keep


# --- results ----------------------------------------------------------------------------------


@dataclass
class Row:
    task_id: str
    strategy: str
    domain: str
    correct: bool
    rounds: int
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    end_reason: str
    calls: int = 0  # model calls the run made (every agent call, re-asks included once)
    detail: str = ""  # what scoring found
    session: str = ""  # the session file, relative to the output folder
    answer: str = ""  # the final answer (trimmed); only in the JSON files
    metrics: dict[str, float] = field(default_factory=dict)  # the method's own figures; JSON files only
    repeat: int = 0  # which of the --repeats runs of this (problem, strategy) pair
    seed: int | None = None  # the repeat's seed (method samplers, the request `seed`)
    rejected: str = ""  # a pass the verdict refused (core.datasets.verdicts: e.g. "non-data return")
    cached_tokens: int | None = None  # of prompt_tokens, from the server's prefix cache (None: not reported)
    cost_usd: float | None = None  # what the run's calls cost (core.llm.prices); None: not recorded
    cost_unknown: list[str] = field(default_factory=list)  # models with no price (the cost is then unknown)
    cost_local: bool = False  # a call went to a local server (free): a cost of 0 is said "free (local server)"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


CSV_FIELDS = [f for f in Row.__dataclass_fields__ if f not in ("answer", "metrics", "cost_unknown", "cost_local")]
Job = tuple[Problem, str, int]  # (problem, strategy, repeat)


def repeat_seed(seed: int, repeat: int) -> int:
    """The seed of repeat r, derived from --seed S: a hash, so nearby S values share no repeat seed."""
    digest = hashlib.sha256(f"swarm-bench:{seed}:{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def resolved_options(strategies: Sequence[str], given: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every option of every strategy as the runs used it (defaults filled in), for results and report."""
    resolved = {s: get_method_info(s).resolve(given.get(s)) for s in strategies}
    for options in resolved.values():
        if "seed" in options:  # BenchRunner.options_for: each repeat's seed replaces it (see the rows)
            options["seed"] = "per repeat (the rows' seed)"
    return resolved

SUMMARY_FIELDS = [
    "strategy",
    "problems",
    "correct",
    "accuracy",
    "mean_rounds",
    "mean_calls",
    "mean_prompt_tokens",
    "mean_completion_tokens",
    "mean_wall_s",
    "total_wall_s",
    "prompt_cache",
    "total_cost_usd",
    "cost",
]


def summarize(rows: Sequence[Row], strategies: Sequence[str]) -> list[dict[str, Any]]:
    """One line per strategy, in the order given: accuracy, and means per problem (paper Tables 2, 8)."""
    table = []
    for name in strategies:
        mine = [r for r in rows if r.strategy == name]
        if not mine:
            continue
        n = len(mine)
        solved = sum(r.correct for r in mine)
        table.append(
            {
                "strategy": name,
                "problems": n,
                "correct": solved,
                "accuracy": round(solved / n, 4),
                "mean_rounds": round(sum(r.rounds for r in mine) / n, 2),
                "mean_calls": round(sum(r.calls for r in mine) / n, 2),
                "mean_prompt_tokens": round(sum(r.prompt_tokens for r in mine) / n, 1),
                "mean_completion_tokens": round(sum(r.completion_tokens for r in mine) / n, 1),
                "mean_wall_s": round(sum(r.wall_s for r in mine) / n, 3),
                "total_wall_s": round(sum(r.wall_s for r in mine), 3),
                "prompt_cache": prompt_cache(mine),
                **sweep_cost(mine),
                **_metric_means(mine),
            }
        )
    return table


def prompt_cache(rows: Sequence[Row]) -> str:
    """The prompt tokens the server served from its prefix cache over the runs that report it: "cached N (x %)"
    of their prompt tokens, or "not reported" when no run's server said."""
    reported = [r for r in rows if r.cached_tokens is not None]
    if not reported:
        return cached_share(None, 0)
    return cached_share(sum(r.cached_tokens or 0 for r in reported), sum(r.prompt_tokens for r in reported))


def sweep_cost(rows: Sequence[Row]) -> dict[str, Any]:
    """What the runs cost together: ``total_cost_usd`` (the priced runs' sum; None when no run recorded a
    cost) and ``cost``, as the table shows it (core.llm.prices.cost_cell: "unknown (model X)" when a model
    had no price)."""
    recorded = [r for r in rows if r.cost_usd is not None]
    total = round(sum(r.cost_usd or 0.0 for r in recorded), 10) if recorded else None
    unknown = {m for r in rows for m in r.cost_unknown}
    return {"total_cost_usd": total, "cost": cost_cell(total, unknown, any(r.cost_local for r in recorded))}


def _metric_means(rows: Sequence[Row]) -> dict[str, float]:
    """The mean of each of a method's own figures over the runs that report it (``mean_<name>``)."""
    names = sorted({name for r in rows for name in r.metrics})
    means = {}
    for name in names:
        values = [float(r.metrics[name]) for r in rows if name in r.metrics]
        means[f"mean_{name}"] = round(sum(values) / len(values), 4)
    return means


def format_table(summary: Sequence[dict[str, Any]]) -> str:
    header = ["strategy", "solved", "accuracy", "rounds", "prompt tok", "compl tok", "calls", "wall s", "prompt cache",
              "cost"]
    lines = [header]
    for s in summary:
        lines.append(
            [
                s["strategy"],
                f"{s['correct']}/{s['problems']}",
                f"{100 * s['accuracy']:.1f}%",
                f"{s['mean_rounds']:.2f}",
                f"{s['mean_prompt_tokens']:.0f}",
                f"{s['mean_completion_tokens']:.0f}",
                f"{s.get('mean_calls', 0):.1f}",
                f"{s['mean_wall_s']:.2f}",
                str(s.get("prompt_cache", "")),
                str(s.get("cost", "—")),
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]

    def render(line: list[str]) -> str:
        cells = zip(line, widths, strict=True)
        return "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(cells))

    table = [render(line) for line in lines]
    for s in summary:  # a method's own figures, one line each (e.g. TopoWeaver-R1's valid-plan rate)
        extra = [f"{k.removeprefix('mean_')} {v:g}" for k, v in s.items() if k.startswith("mean_") and k not in
                 SUMMARY_FIELDS]
        if extra:
            table.append(f"{s['strategy']}: mean " + ", ".join(extra))
    return "\n".join(table)


class ResultsLog:
    """results.jsonl: one line per finished (problem, strategy), appended and flushed at once."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def read(self) -> list[Row]:
        """The rows recorded so far; a line cut off by a kill (the last one) is ignored."""
        if not self.path.exists():
            return []
        rows: list[Row] = []
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                data = json.loads(line)
                rows.append(Row.from_dict(data))
            except (ValueError, TypeError):
                continue
        return rows

    def append(self, row: Row) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row.to_dict(), ensure_ascii=False) + "\n")
            handle.flush()


def write_results(out: Path, rows: Sequence[Row], strategies: Sequence[str], meta: dict[str, Any]) -> list[Path]:
    """results.csv (rows), summary.csv (per strategy) and results.json (both, plus the run's setup)."""
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(rows, strategies)
    written = []
    with (out / "results.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(r.to_dict() for r in rows)
    written.append(out / "results.csv")
    extra = sorted({k for s in summary for k in s if k not in SUMMARY_FIELDS})
    with (out / "summary.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, [*SUMMARY_FIELDS, *extra])
        writer.writeheader()
        writer.writerows(summary)
    written.append(out / "summary.csv")
    data = {**meta, "summary": summary, "rows": [r.to_dict() for r in rows]}
    (out / "results.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    written.append(out / "results.json")
    return written


# --- strategies -------------------------------------------------------------------------------


def bench_method(name: str, team: str | Team, options: dict[str, Any] | None = None) -> Method:
    """The method a strategy name stands for, built for this problem's domain or team (core.methods)."""
    return build_method(name, options, builtin_team(team) if isinstance(team, str) else team)


# --- the runner -------------------------------------------------------------------------------


class EndpointFailure(Exception):
    """The endpoint stopped answering: the benchmark cannot go on (one line for the user)."""


@dataclass
class _Run:
    final_answer: str
    rounds: int
    prompt_tokens: int
    completion_tokens: int
    end_reason: str
    detail: str
    calls: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    cached_tokens: int | None = None
    cost_usd: float | None = None
    cost_unknown: list[str] = field(default_factory=list)
    cost_local: bool = False


def session_name(task_id: str) -> str:
    """A file name for a task's session: the id with unsafe characters replaced, plus a short hash of
    the raw id whenever that changed it, so ids that differ only there ("a/b", "a_b", "a b") never share
    a file. Stable: the same id always gives the same name."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id).strip("._")[:100] or "problem"
    if safe == task_id:
        return safe
    return f"{safe}-{hashlib.sha256(task_id.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


ProgressCallback = Callable[[Row, int, int], None]


@dataclass
class BenchRunner:
    """Runs (problem, strategy) pairs with at most ``concurrency`` problems at a time."""

    settings: Settings
    backend: Backend
    embedder: Embedder
    out: Path
    concurrency: int = 1
    on_row: ProgressCallback | None = None
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    fatal: str | None = None
    stopped: bool = False
    rows: list[Row] = field(default_factory=list)
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    repeats: int = 1
    seed: int = 0
    on_start: Callable[[str], None] | None = None  # a pair began (strategy): progress counts what runs
    control: ControlScript | None = None  # --control FILE: the same steering script in every run
    # The sweep's cost cap in US dollars (--sweep-max-cost): once this sweep's finished runs cost that much, no
    # new run starts (runs already started finish). ``cost_stopped`` says why it stopped, once it did.
    max_cost: float | None = None
    cost_stopped: str = ""

    @property
    def log(self) -> ResultsLog:
        return ResultsLog(self.out / "results.jsonl")

    def settings_for(self, problem: Problem, strategy: str) -> Settings:
        # A user team (--team) runs the problems of its own domain; the others get their built-in team.
        team = team_of(self.settings) if self.settings.team else None
        if team is None or team.name != problem.domain:
            team = builtin_team(problem.domain)
        settings = replace(
            self.settings, domain=DomainName(problem.domain), team=self.settings.team if team.custom_name else None,
            execute_code=True, k_in=min(self.settings.k_in, len(team.workers) - 1),
        )
        return settings

    def stop(self) -> None:
        """Stop cleanly: unfinished pairs are cancelled and not recorded; finished rows stay."""
        self.stopped = True
        for task in list(self._tasks):
            task.cancel()

    async def run(self, jobs: Sequence[Job | tuple[Problem, str]], done_before: int = 0) -> list[Row]:
        """Run the jobs; a (problem, strategy) pair without a repeat is repeat 0."""
        limit = asyncio.Semaphore(self.concurrency)
        total = done_before + len(jobs)

        async def one(problem: Problem, strategy: str, repeat: int) -> None:
            async with limit:
                if self.stopped or self._over_cost():
                    return
                if self.on_start is not None:
                    self.on_start(strategy)
                seed = repeat_seed(self.seed, repeat)
                REQUEST_SEED.set(seed)  # this task's context only: every call of the run sends it
                row = await self.run_one(problem, strategy, repeat, seed)
            self.log.append(row)
            self.rows.append(row)
            if self.on_row is not None:
                self.on_row(row, done_before + len(self.rows), total)

        for job in jobs:
            problem, strategy, repeat = job if len(job) == 3 else (*job, 0)
            task = asyncio.create_task(one(problem, strategy, repeat))
            self._tasks.add(task)
        try:
            results = await asyncio.gather(*self._tasks, return_exceptions=True)
        finally:
            self._tasks.clear()
        for result in results:
            if isinstance(result, EndpointFailure) and self.fatal is None:
                self.fatal = str(result)
            elif isinstance(result, Exception) and not isinstance(result, EndpointFailure):
                raise result
        return self.rows

    def _over_cost(self) -> bool:
        """The sweep's cost cap is reached: say so once; no further run starts."""
        if self.max_cost is None:
            return False
        spent = sum(r.cost_usd or 0.0 for r in self.rows)
        if spent >= self.max_cost and not self.cost_stopped:
            self.cost_stopped = (f"the sweep's cost cap of {usd_text(self.max_cost)} was reached "
                                 f"({usd_text(spent)} spent): no further run starts")
        return spent >= self.max_cost

    def _fail(self, message: str) -> EndpointFailure:
        if self.fatal is None:
            self.fatal = message
        self.stop()
        return EndpointFailure(message)

    async def run_one(self, problem: Problem, strategy: str, repeat: int = 0, seed: int | None = None) -> Row:
        settings = self.settings_for(problem, strategy)
        folder = self.out / "sessions" / strategy
        name = session_name(problem.task_id) + (f"-r{repeat}" if repeat else "")  # repeat 0 keeps the old name
        recorder = SessionRecorder(folder, path=folder / f"{name}.json")
        start = time.perf_counter()
        run = await self._run_engine(problem, strategy, settings, recorder, seed)
        wall = time.perf_counter() - start
        if run.end_reason == "error":
            raise self._fail(run.detail)
        verdict = await score(problem, run.final_answer, self.limits)
        return Row(
            task_id=problem.task_id,
            strategy=strategy,
            domain=problem.domain,
            correct=verdict.correct,
            rounds=run.rounds,
            prompt_tokens=run.prompt_tokens,
            completion_tokens=run.completion_tokens,
            wall_s=round(wall, 3),
            end_reason=run.end_reason,
            calls=run.calls,
            detail=verdict.detail,
            rejected=verdict.rejected,
            session=str(recorder.path.relative_to(self.out)) if recorder.path and recorder.saves else "",
            answer=run.final_answer[:ANSWER_CHARS],
            metrics=run.metrics,
            repeat=repeat,
            seed=seed,
            cached_tokens=run.cached_tokens,
            cost_usd=run.cost_usd,
            cost_unknown=run.cost_unknown,
            cost_local=run.cost_local,
        )

    def options_for(self, strategy: str, seed: int | None) -> dict[str, Any]:
        """The strategy's options; a method with a ``seed`` option (random, TopoDIM, DMoA) takes the repeat's."""
        options = dict(self.settings.strategy_options.get(strategy) or {})
        if seed is not None and any(o.name == "seed" for o in get_method_info(strategy).options):
            options["seed"] = seed
        return options

    async def _run_engine(
        self, problem: Problem, strategy: str, settings: Settings, recorder: SessionRecorder, seed: int | None = None
    ) -> _Run:
        events: list[ev.Event] = []
        team = team_of(settings)
        plan = RunPlan.make(settings, team=team, method=bench_method(strategy, team, self.options_for(strategy, seed)))
        io = RunIO(sinks=[lambda e: None if is_delta(e) else events.append(e)], recorder=recorder,
                   backend=self.backend, embedder=self.embedder, sandbox_limits=self.limits, steering=self.control)
        async with open_run(plan, problem.task, io) as run:
            engine = run.engine
            finished = await run.run()
        measure = get_method_info(strategy).metrics
        own = getattr(engine.method, "metrics", None)  # a method's figures it keeps itself (DMoA)
        return _Run(
            finished.final_answer,
            finished.rounds,
            finished.prompt_tokens,
            finished.completion_tokens,
            finished.reason,
            finished.detail + (f"; {finished.replies_copied} copied the reply template" if finished.replies_copied
                               else ""),
            calls=len(of_kind(events, ev.AgentFinished)),
            metrics={**(measure(events) if measure is not None else {}), **(dict(own()) if callable(own) else {})},
            cached_tokens=finished.cached_tokens,
            cost_usd=finished.cost_usd,
            cost_unknown=list(finished.cost_unknown),
            cost_local=finished.cost_local,
        )


def plan_jobs(
    problems: Sequence[Problem], strategies: Sequence[str], finished: Sequence[Row], repeats: int = 1
) -> tuple[list[Job], list[Row]]:
    """The (problem, strategy, repeat) runs still to do (repeat-major, then problem), and the finished
    rows that belong to this selection. Repeat-major: a sweep cut short has whole repeats, not R
    repeats of the first problems."""
    wanted = {(p.task_id, s, r) for p in problems for s in strategies for r in range(repeats)}
    kept: dict[tuple[str, str, int], Row] = {}
    for row in finished:
        key = (row.task_id, row.strategy, row.repeat)
        if key in wanted:
            kept[key] = row  # a run recorded twice: the later row wins
    jobs = [
        (p, s, r) for r in range(repeats) for p in problems for s in strategies if (p.task_id, s, r) not in kept
    ]
    return jobs, list(kept.values())


def order_rows(rows: Sequence[Row], problems: Sequence[Problem], strategies: Sequence[str]) -> list[Row]:
    position = {p.task_id: i for i, p in enumerate(problems)}
    rank = {s: i for i, s in enumerate(strategies)}
    return sorted(
        rows, key=lambda r: (rank.get(r.strategy, len(rank)), position.get(r.task_id, len(position)), r.repeat)
    )
