"""Training TopoDIM's generator (§3.3, Alg. 1 stage 1): REINFORCE on a dataset through the real runtime.

Each step takes one problem, draws ``samples`` graphs from the policy at the annealed temperature
(2.0 -> 0.5, §4.1), runs the whole TopoDIM pass for each against the endpoint, scores the final answer
the way the benchmark does (HumanEval's hidden tests in the sandbox, MATH by equivalence) for
R_task ∈ {0, 1}, adds the diversity of the kept edge types (eq. 10) as R = λ R_task + (1 - λ) R_div
(eq. 11) and takes one Adam step (lr 0.01) on -[(R - b) log π(G) + γ H(π)] (eq. 12), b a moving
average of the rewards. The checkpoint (weights, optimizer, baseline, step, plan) is written after
every step, so a stopped run resumes where it was; later runs with ``generator = "policy"`` use it.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from core.compose.assembly import RunIO, open_run
from core.compose.plan import RunPlan
from core.compose.runner import Backend
from core.datasets.problems import Problem
from core.datasets.verdicts import score
from core.evaluation.sandbox import SandboxLimits
from core.llm.embeddings import Embedder
from core.methods.catalogue import get_method_info
from core.methods.topodim.method import TopoDIMMethod
from core.methods.topodim.policy import (
    LocalPolicies,
    PolicyLoadError,
    PolicySample,
    TopoDIMPolicy,
    annealed_temperature,
    distill_loss,
    load_checkpoint,
    moving_baseline,
    policy_from_checkpoint,
    prior_edges,
    reinforce_loss,
    reward,
    save_checkpoint,
)
from core.methods.topodim.prompts import team_roles
from core.routing.topodim import r_div
from core.runtime import events as ev
from core.runtime.config import DomainName, Settings
from core.runtime.dispatch import is_warning
from core.runtime.engine import SwarmEngine
from core.runtime.outcome import EndReason
from core.runtime.rosters import builtin_team


class TrainError(RuntimeError):
    """Training cannot go on; the message is one line for the user."""


@dataclass(frozen=True)
class TrainPlan:
    """What a training run does; a checkpoint resumes only under the same plan."""

    dataset: str
    offset: int = 0
    limit: int | None = None
    epochs: int = 1
    samples: int = 2  # graphs drawn per problem and step (the batch of eq. 12)
    lam: float = 0.8  # λ of eq. 11 (paper: 0.3 | 0.5 | 0.8)
    gamma: float = 0.01  # entropy weight γ of eq. 12 (the paper's η: 0.01 | 0.03 | 0.05)
    lr: float = 0.01  # §4.1
    momentum: float = 0.9  # of the moving-average baseline
    t_start: float = 2.0  # temperature annealing (§4.1)
    t_end: float = 0.5
    alpha: float = 0.7
    edge_types: str = "conditioned,feedback,debate"
    agents: int = 5
    seed: int = 0

    def matches(self, other: dict[str, Any]) -> list[str]:
        """The fields in which a checkpoint's plan differs from this one (more epochs may be added)."""
        mine = asdict(self)
        return [k for k in mine if k != "epochs" and other.get(k) != mine[k]]


@dataclass
class StepReport:
    step: int  # 1-based
    total: int
    task_id: str
    temperature: float
    rewards: list[float]
    task_rewards: list[float]
    diversity: list[float]
    baseline: float  # after the update
    loss: float
    log_probs_before: list[float] = field(default_factory=list)  # log π(G) of each sample, before the step
    samples: list[PolicySample] = field(default_factory=list)


StepCallback = Callable[[StepReport], None]
NoticeCallback = Callable[[str], None]


class TopoDIMTrainer:
    def __init__(
        self,
        plan: TrainPlan,
        settings: Settings,
        backend: Backend,
        embedder: Embedder,
        weights: Path,
        *,
        resume: bool = False,
        on_step: StepCallback | None = None,
        on_notice: NoticeCallback | None = None,
        limits: SandboxLimits | None = None,
    ) -> None:
        self.plan = plan
        self.settings = settings
        self.backend = backend
        self.embedder = embedder
        self.weights = weights
        self.on_step = on_step
        self.on_notice = on_notice
        self.limits = limits or SandboxLimits()
        self.step = 0
        self.baseline = 0.0
        self.stopped = False
        self._engine: SwarmEngine | None = None
        self.policy = TopoDIMPolicy(seed=plan.seed)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=plan.lr)
        if resume:
            self._resume()

    def _resume(self) -> None:
        try:
            data = load_checkpoint(self.weights)
            policy = policy_from_checkpoint(data, self.weights)
        except PolicyLoadError as exc:
            raise TrainError(f"cannot resume: {exc}") from None
        stored = data.get("plan")
        if not isinstance(stored, dict):
            raise TrainError(f"cannot resume: {self.weights} holds weights but no training plan: use --restart")
        differ = self.plan.matches(stored)
        if differ:
            raise TrainError(
                f"cannot resume: {self.weights} was trained with other settings ({', '.join(differ)}): "
                "repeat them, or use --restart"
            )
        self.policy = policy
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=self.plan.lr)
        if isinstance(data.get("optimizer"), dict):
            try:
                self.optimizer.load_state_dict(data["optimizer"])
            except (ValueError, KeyError, RuntimeError):
                raise TrainError(f"cannot resume: the optimizer state in {self.weights} does not fit") from None
        self.step = int(data.get("step", 0))
        self.baseline = float(data.get("baseline", 0.0))

    def stop(self) -> None:
        """Stop after cancelling the run in progress; completed steps stay in the checkpoint."""
        self.stopped = True
        if self._engine is not None:
            self._engine.control.cancel()

    def total_steps(self, problems: Sequence[Problem]) -> int:
        return self.plan.epochs * len(problems)

    def _options(self) -> dict[str, Any]:
        info = get_method_info("topodim")
        return info.resolve(
            {"generator": "policy", "alpha": self.plan.alpha, "edge_types": self.plan.edge_types,
             "agents": self.plan.agents, "seed": self.plan.seed}
        )

    def _sample_seed(self, step: int, sample: int) -> int:
        digest = hashlib.sha256(f"train:{self.plan.seed}:{step}:{sample}".encode()).digest()
        return int.from_bytes(digest[:6], "big")

    async def _one_run(self, problem: Problem, temperature: float, seed: int) -> tuple[TopoDIMMethod, float] | None:
        team = builtin_team(problem.domain)
        method = TopoDIMMethod(self._options(), team, policy=self.policy, temperature=temperature, sample_seed=seed)
        settings = replace(self.settings, domain=DomainName(problem.domain), execute_code=True,
                           k_in=min(self.settings.k_in, len(team.workers) - 1))
        def notices(event: ev.Event) -> None:  # the runs' warnings (a reply that did not parse, ...) reach the user
            if is_warning(event) and self.on_notice is not None:
                self.on_notice(f"{problem.task_id}: {event.message}")

        plan = RunPlan.make(settings, method=method)
        io = RunIO(sinks=[notices], backend=self.backend, embedder=self.embedder, sandbox_limits=self.limits)
        async with open_run(plan, problem.task, io) as run:
            self._engine = run.engine
            try:
                finished = await run.run()
            finally:
                self._engine = None
        if finished.reason == EndReason.CANCELLED:
            return None
        if finished.reason == EndReason.ERROR:
            raise TrainError(f"the run on {problem.task_id} failed: {finished.detail}")
        verdict = await score(problem, finished.final_answer, self.limits)
        return method, 1.0 if verdict.correct else 0.0

    async def run(self, problems: Sequence[Problem]) -> list[StepReport]:
        """Train from the current step to the end of the plan (or until stopped). Returns this call's steps."""
        if not problems:
            raise TrainError("no problems to train on")
        total = self.total_steps(problems)
        reports: list[StepReport] = []
        while self.step < total and not self.stopped:
            problem = problems[self.step % len(problems)]
            temperature = annealed_temperature(self.step, total, self.plan.t_start, self.plan.t_end)
            batch: list[tuple[PolicySample, float]] = []
            task_rewards: list[float] = []
            diversity: list[float] = []
            for sample in range(self.plan.samples):
                outcome = await self._one_run(problem, temperature, self._sample_seed(self.step, sample))
                if outcome is None or self.stopped:
                    return reports
                method, task = outcome
                if method.last_sample is None or method.last_graph is None:
                    continue  # the policy could not run (the run said why); nothing to learn from
                div = r_div(method.last_graph.kept)
                batch.append((method.last_sample, reward(task, div, self.plan.lam)))
                task_rewards.append(task)
                diversity.append(div)
            if not batch:
                raise TrainError(f"no graph came from the policy on {problem.task_id} (see the notices)")
            with torch.no_grad():
                before = [float(self.policy.log_prob_and_entropy(s)[0]) for s, _ in batch]
            loss = await asyncio.to_thread(self._update, batch)
            rewards = [r for _, r in batch]
            self.baseline = moving_baseline(self.baseline, rewards, self.plan.momentum)
            self.step += 1
            self._save()
            report = StepReport(
                step=self.step, total=total, task_id=problem.task_id, temperature=temperature, rewards=rewards,
                task_rewards=task_rewards, diversity=diversity, baseline=self.baseline, loss=loss,
                log_probs_before=before, samples=[s for s, _ in batch],
            )
            reports.append(report)
            if self.on_step is not None:
                self.on_step(report)
        return reports

    def _update(self, batch: list[tuple[PolicySample, float]]) -> float:
        """One Adam step on eq. 12's loss (the baseline is the one before this step's rewards)."""
        self.optimizer.zero_grad()
        loss = reinforce_loss(self.policy, batch, self.baseline, self.plan.gamma)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())

    def _save(self) -> None:
        try:
            save_checkpoint(
                self.weights,
                self.policy,
                optimizer=self.optimizer.state_dict(),
                baseline=self.baseline,
                step=self.step,
                plan=asdict(self.plan),
                dataset=self.plan.dataset,
            )
        except OSError as exc:
            raise TrainError(f"cannot write the checkpoint {self.weights}: {exc.strerror or exc}") from None


# --- stage 2: distillation into local policies (§3.4, Alg. 1 l.23-25) -------------------------------

_POLICY_KEYS = ("format", "roles", "hidden", "layers", "task_dim", "state")


@dataclass
class DistillReport:
    queries: int
    steps: int
    kl_start: float  # mean eq. 13 loss per query before distilling
    kl_end: float  # and after


async def distill(
    weights: Path,
    problems: Sequence[Problem],
    embedder: Embedder,
    *,
    steps: int = 200,
    lr: float = 0.01,
    temperature: float = 0.5,
    agents: int = 5,
    seed: int = 0,
) -> DistillReport:
    """Distil the trained centralised policy into one MLP per role by minimising eq. 13 on the queries
    (M' of them, no model calls: only their MiniLM embeddings), then store the local policies in the
    same weights file; ``generator = "decentralized"`` uses them."""
    if not problems:
        raise TrainError("no problems to distil on")
    try:
        data = load_checkpoint(weights)
        central = policy_from_checkpoint(data, weights)
    except PolicyLoadError as exc:
        raise TrainError(f"cannot distil: {exc}") from None
    vectors = await embedder.aembed([p.task for p in problems])
    queries = []
    for problem, vector in zip(problems, vectors, strict=True):
        names = [r.name for r in team_roles(builtin_team(problem.domain), agents)]
        queries.append((names, prior_edges(problem.domain, names), torch.tensor(vector, dtype=torch.float32)))
    local = LocalPolicies(central.roles, hidden=central.hidden, seed=seed)

    def mean_loss() -> float:
        with torch.no_grad():
            return sum(float(distill_loss(central, local, *q, temperature)) for q in queries) / len(queries)

    def optimise() -> tuple[float, float]:
        start = mean_loss()
        optimizer = torch.optim.Adam(local.parameters(), lr=lr)
        for step in range(steps):
            optimizer.zero_grad()
            distill_loss(central, local, *queries[step % len(queries)], temperature).backward()
            optimizer.step()
        return start, mean_loss()

    kl_start, kl_end = await asyncio.to_thread(optimise)
    kept = {k: v for k, v in data.items() if k not in _POLICY_KEYS}
    kept.update(
        local_state=local.state_dict(),
        distilled={"queries": len(queries), "steps": steps, "kl": kl_end, "temperature": temperature},
    )
    try:
        save_checkpoint(weights, central, **kept)
    except OSError as exc:
        raise TrainError(f"cannot write {weights}: {exc.strerror or exc}") from None
    return DistillReport(len(queries), steps, kl_start, kl_end)
