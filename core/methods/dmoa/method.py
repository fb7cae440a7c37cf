"""DMoA: Differentiable Mixture-of-Agents (Wu et al., arXiv 2605.15706).

Each step i (up to L_max, default 20) a router reads the context vector X_i (MiniLM, d = 384) and scores
the pool of N agents; the top k_i run in parallel, each seeing the problem and every response of the
previous step's agents (the MoA-style P_last); X_{i+1} is the alpha-weighted sum of their response
embeddings; a Summarizer reads the problem and the step's responses and answers ``[FINAL]`` with the
answer or ``[CONTINUE]``. The equations live in core.methods.dmoa.routing (NumPy) and
core.methods.dmoa.router (the GRU router's forward pass in NumPy and its weights) and core.methods.dmoa.train
(its training, torch, imported only when a run trains).
This module is the step loop; the router's per-step use is core.methods.dmoa.selector, the Summarizer
core.methods.dmoa.summary, test-time training core.methods.dmoa.ttt and a fork's resume core.methods.dmoa.replay.

Routers (``[strategy.dmoa] router``):

* ``gru`` — the paper's router: GRU + Linear head (eq. 2 / 10), trained without labels from predictive
  entropy (eq. 13-15); seeded initialisation until trained (ours: the paper always trains);
* ``llm`` — the *w LLM Selector* ablation (Table 5): the Manager model picks up to K agents with weights
  in one JSON call per step;
* ``semantic`` — z_i[a] = cos(X_i, MiniLM(profile_a)), no learning (ours; no ablation in the paper).

Test-time training (``ttt = N``, Table 3's DMoA (TTT), App. B.5): the first N runs of this process for a (domain,
team) run dense — every agent runs every step, with top logprobs, and the routed ones carry the
trajectory as in Alg. 1 — then the router is updated (AdamW, batch 8, 3 epochs) and saved; later runs
route sparsely with it.

Each agent's system prompt holds its profile and the user query, P_sys = (Profile, P_usr) (§3.1); its
user message holds the previous step's responses (``query_in = "user"`` moves the query there instead).

Decisions where the paper is silent (our readings; docs/fidelity.md lists them):
* P_last at step 1 is empty; the Summarizer sees only the routed agents' responses, dense or not.
* A routed agent that gave no text drops out of X_{i+1} and alpha renormalises over the others.
* A [FINAL] with no answer after it reads as [CONTINUE]; at L_max the Summarizer is told to answer, and
  a reply without [FINAL] is taken as the answer (or the answer role's latest output when empty).
* With code execution on, the latest code is tested after every step (the paper's agents have a code
  execution tool); the results go to the Summarizer and the next step's agents. The Summarizer still
  decides when to stop.
* Training episodes stop like inference (the Summarizer's [FINAL] or L_max); Alg. 1 writes L_max.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pydantic import Field

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)
from core.methods.dmoa.events import CALL_STEP, DmoaRouted
from core.methods.dmoa.fidelity import DEVIATIONS as FIDELITY
from core.methods.dmoa.prompts import QUERY_IN, QueryPlace, agent_instructions, dmoa_pool
from core.methods.dmoa.replay import resume
from core.methods.dmoa.routing import Choice, context_vector, cosine, predictive_entropy
from core.methods.dmoa.selector import ROUTERS, StepRouter
from core.methods.dmoa.steer import DmoaSteering
from core.methods.dmoa.step import StepState
from core.methods.dmoa.summary import PHASE_SUMMARY, SUMMARIZER, Summarizer
from core.methods.dmoa.threads import DmoaRequests, keep_reply
from core.methods.dmoa.ttt import TTTState, ttt_state, update_router
from core.methods.registry import (
    GraphShape,
    MethodError,
    MethodInfo,
    MethodOptions,
    call_options,
    call_tables,
    choice,
    register,
    with_calls,
)
from core.routing.dytopo import KIND_HANDOFF, Edge, RoutingResult
from core.runtime import events as ev
from core.runtime.agent_threads import THREAD_ORDERS
from core.runtime.control import StepBoundary
from core.runtime.engine import AgentResult
from core.runtime.events import CallStatus
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.parsing import own_text
from core.runtime.prompts import PromptOrder
from core.runtime.rosters import Team
from core.runtime.run_context import begin_round, finish_round, notice, start_phase
from core.runtime.steering import SteerKind

if TYPE_CHECKING:
    from core.methods.dmoa.train import Trace
    from core.runtime.run_context import RunContext

NAME = "dmoa"

DEFAULT_TAU = 0.1  # App. B.3
DEFAULT_L_MAX = 20  # App. B.3
DEFAULT_K = 4  # (N, K) = (10, 4) in App. B.3; K for our pools: our reading
DEFAULT_TOP_LOGPROBS = 5


def default_k(n_agents: int) -> int:
    """K = 4, or N - 1 for a smaller pool (at least 1)."""
    return max(1, min(DEFAULT_K, n_agents - 1))


CALL_OPTIONS = (
    call_options("agent", "the pool's agents' calls", "work_call"),
    call_options("summarizer", "the Summarizer's calls", "manager_call"),
    call_options("selector", "the Selector's calls (router llm)", "manager_call"),
)


class DmoaMethod:
    """The step loop (Alg. 2): route, run the routed agents, aggregate X_{i+1}, ask the Summarizer. The router
    is core.methods.dmoa.selector, the Summarizer core.methods.dmoa.summary, test-time training
    core.methods.dmoa.ttt, a fork's resume core.methods.dmoa.replay."""

    name = NAME
    call_tables = call_tables(CALL_OPTIONS)  # each call kind's settings table, for the engine's call_limits

    def __init__(self, options: dict[str, Any], team: Team) -> None:
        self.pool = dmoa_pool(team)
        self.names = [a.name for a in self.pool]
        n = len(self.names)
        self.router_kind: str = options.get("router", "gru")
        self.tau: float = float(options.get("tau", DEFAULT_TAU))
        k = int(options.get("k", 0) or 0)
        if k > n:
            raise MethodError(f"[strategy.dmoa] k must be between 1 and the pool size {n}, got {k}")
        self.k_max = k or default_k(n)
        self.l_max: int = int(options.get("l_max", DEFAULT_L_MAX))
        self.adaptive: bool = bool(options.get("adaptive_k", True))
        self.ttt: int = int(options.get("ttt", 0))
        self.seed: int = int(options.get("seed", 0))
        self.top_logprobs: int = int(options.get("top_logprobs", DEFAULT_TOP_LOGPROBS))
        self.collect: bool = bool(options.get("collect", False))  # the trainer: run densely, keep the trace
        self.query_in: str = str(options.get("query_in", QueryPlace.SYSTEM))  # where the user query goes
        self.prompt_order: str = str(options.get("prompt_order", PromptOrder.CONVERSATION))  # core.methods.dmoa.threads
        if self.ttt and self.router_kind != "gru":
            raise MethodError(f"[strategy.dmoa] ttt trains the GRU router: it needs router=gru, not {self.router_kind}")
        self.router = StepRouter(self.router_kind, self.pool, tau=self.tau, k_max=self.k_max, adaptive=self.adaptive,
                                 seed=self.seed, weights_dir=str(options.get("weights_dir", "") or ""))
        self.k_history: list[int] = []
        self.trace: Trace | None = None  # the dense run's trace (collect mode and TTT)
        self._ttt: TTTState | None = None
        self._claim_open = False  # this run holds one of the TTT dense slots
        self._dense = False

    # --- engine interface ---------------------------------------------------------------------
    def roster(self, team: Team) -> tuple[str, list[str], dict[str, str]]:
        roles = {SUMMARIZER: "reads each step's responses and answers [FINAL] with the answer, or [CONTINUE]"}
        roles.update({a.name: a.profile for a in self.pool})
        return SUMMARIZER, list(self.names), roles

    def metrics(self) -> dict[str, float]:
        """For the benchmark: the mean number of routed agents per step."""
        return {"k": round(float(np.mean(self.k_history)), 3)} if self.k_history else {}

    async def run(self, ctx: RunContext) -> RunOutcome:
        self.ctx = ctx
        self.requests = DmoaRequests(ctx, self.query_in, self.prompt_order)
        self.summarizer = Summarizer(ctx, self.requests, self.names, self.l_max, self.top_logprobs)
        self.steer = DmoaSteering(ctx, self.name, list(self.names))
        ctx.attach(steer=self.steer.apply)
        await self._prepare_router()
        completed = False
        try:
            result = await self._run_steps()
            completed = True
            return result
        finally:
            await self._end_ttt(completed=completed)

    # --- set-up -------------------------------------------------------------------------------
    async def _prepare_router(self) -> None:
        ctx = self.ctx
        await self.router.prepare(ctx)
        if self.router_kind != "gru":
            return
        self._dense = self.collect
        if self.ttt and ctx.spec.fork is None and not self.collect:
            key = str(self.router.store().path(ctx.spec.team.name, self.names))
            self._ttt = ttt_state(key, self.ttt)
            if self._ttt.ready:  # an earlier dense run ended without updating (it was cancelled)
                await update_router(ctx, self.router, self._ttt)
            self._dense = self._claim_open = self._ttt.claim()
            if self._dense:
                notice(ctx,
                    f"test-time training: run {self._ttt.claimed} of {self.ttt} is dense (every agent runs and "
                    "its entropy is collected); the router is updated after the last one",
                    "info",
                )

    # --- the steps ------------------------------------------------------------------------------
    async def _first_step(self) -> tuple[int, StepState, str]:
        """Where the steps start: after a fork's step r (with the test results it left), or at step 1 with
        X_1 = MiniLM(the problem) (eq. 1)."""
        ctx = self.ctx
        if ctx.spec.fork is not None:
            resumed = await resume(ctx, self.router, self.requests)
            self.k_history = resumed.k_history
            self.steer.carry(resumed.notes.to_all, resumed.notes.waiting)
            return resumed.round, resumed.state, resumed.feedback
        x = np.asarray((await ctx.embed([ctx.spec.problem]))[0], dtype=np.float64)  # eq. 1
        if self._dense:
            from core.methods.dmoa.train import Trace

            self.trace = Trace(x1=x.tolist(), problem=ctx.spec.problem)
        return 0, StepState([], x, [], []), ""

    async def _run_steps(self) -> RunOutcome:
        ctx = self.ctx
        start, step_state, feedback = await self._first_step()
        x_prev: np.ndarray | None = None
        for step in range(start + 1, self.l_max + 1):
            await ctx.checkpoint(StepBoundary.ROUND)
            begin_round(ctx, step, self._params())
            x = step_state.x_next
            choice = await self._route_step(step, step_state, x, x_prev)
            selected = [self.names[i] for i in choice.selected]
            await ctx.checkpoint(StepBoundary.PHASE)
            running = list(self.names) if self._dense else selected
            dense = " (dense: every agent runs)" if self._dense else ""
            start_phase(ctx, ev.Phase.WORK, f"step {step}: {', '.join(selected)}{dense}")
            results = await ctx.gather(
                {name: self._agent_call(name, step, step_state.responses, feedback) for name in running}
            )
            evaluation = await ctx.evaluate(step, {n: r for n, r in results.items() if r.public})
            feedback = evaluation.feedback if evaluation is not None else ""
            next_state, entropy = await self._aggregate(step, choice, results, x)
            await ctx.checkpoint(StepBoundary.PHASE)
            start_phase(ctx, PHASE_SUMMARY, f"step {step}: the Summarizer decides [FINAL] or [CONTINUE]")
            outcome = await self.summarizer.decide(step, next_state.responses, feedback, choice, entropy)
            finish_round(ctx)
            if outcome is not None:
                return outcome
            x_prev, step_state = x, next_state
        answer, source = ctx.state.answer  # a fork from the last step: nothing left to run
        return RunOutcome(EndReason.MAX_ROUNDS, f"reached L_max ({self.l_max} steps)", answer, source)

    async def _route_step(self, step: int, previous: StepState, x: np.ndarray, x_prev: np.ndarray | None) -> Choice:
        """The router's choice for this step (steered when a person forced or excluded agents), recorded."""
        ctx = self.ctx
        scoring = f"step {step}: the {self.router_kind} router scores {len(self.names)} agents"
        start_phase(ctx, ev.Phase.ROUTING, scoring)
        routed = await self.router.route(ctx, self.requests, step, x, previous.responses)
        choice: Choice = self.steer.steer_choice(routed, step)
        self.k_history.append(choice.k)
        selected = [self.names[i] for i in choice.selected]
        ctx.emit(
            DmoaRouted(
                round=step,
                router=self.router_kind,
                names=list(self.names),
                logits=_floats(choice.logits),
                probs=_floats(choice.probs),
                tau=self.tau,
                k=choice.k,
                k_max=self.k_max,
                selected=selected,
                alpha=_floats(choice.alpha),
                dense=self._dense,
                context=_floats(x),
                context_shift=round(cosine(x, x_prev), 4) if x_prev is not None else None,
                note="; ".join(n for n in (self.router.note, choice.note) if n),
            )
        )
        ctx.emit(self._handoff(step, previous, selected))
        return choice

    def _params(self) -> dict[str, Any]:
        """What a step runs with, in the params shape every consumer knows: tau is DMoA's routing
        temperature, k_in its K (the most agents a step routes), max_rounds its L_max."""
        return {"tau": self.tau, "k_in": self.k_max, "max_rounds": self.l_max}

    def _handoff(self, step: int, previous: StepState, selected: list[str]) -> ev.TopologyBuilt:
        """The implied topology (Alg. 2's P_last, drawn): every agent of step i-1 hands its response to every
        agent of step i, weighted by the alpha it had in X_i."""
        n = len(self.names)
        index = {name: i for i, name in enumerate(self.names)}
        matrix = [[0.0] * n for _ in range(n)]
        edges: list[Edge] = []
        for src, weight in zip(previous.senders, previous.sender_alpha, strict=True):
            for dst in selected:
                edges.append(Edge(src, dst, round(float(weight), 4), KIND_HANDOFF))
                matrix[index[dst]][index[src]] = round(float(weight), 4)
        edges.sort(key=lambda e: (e.dst, -e.score, e.src))
        routing = RoutingResult(
            names=list(self.names),
            tau=self.tau,
            k_in=self.k_max,
            similarity=matrix,
            edges=edges,
            order=list(selected),
            tiers=[list(selected)],
            paper_order=list(selected),
            inactive=[name for name in self.names if name not in selected],
        )
        return ev.TopologyBuilt(
            round=step, routing=routing.to_dict(), query_embeddings=[], key_embeddings=[], strategy=NAME
        )

    async def _agent_call(
        self, name: str, step: int, previous: list[tuple[str, str]], feedback: str
    ) -> AgentResult:
        ctx = self.ctx
        agent = self.pool[self.names.index(name)]
        note = self.steer.note_block(name)  # a note from the person steering the run, after the request
        messages, shrink, turn = self.requests.agent(agent, step, previous, feedback, note)
        # A reply that only repeats its instructions is asked for once more, then not aggregated (issue 44).
        told = agent_instructions(ctx.spec.team.name, agent, step, bool(previous))
        result, _ = await ctx.call(
            name, CALL_STEP, messages, kind="agent", parser=own_text(told),
            top_logprobs=self.top_logprobs if self._dense else 0, shrink=shrink,
        )
        keep_reply(turn, result)
        return result

    async def _aggregate(
        self, step: int, choice: Choice, results: dict[str, AgentResult], x: np.ndarray
    ) -> tuple[StepState, dict[str, float]]:
        """R_hat = ST(R) (eq. 6 / 8) and X_{i+1} (eq. 7 / 9); on dense steps also every agent's entropy."""
        ctx = self.ctx
        selected = [self.names[i] for i in choice.selected]
        wanted = [n for n in (self.names if self._dense else selected) if n in results and results[n].public]
        texts = [results[n].public for n in wanted]
        vectors: np.ndarray | list[list[float]] = await ctx.embed(texts) if wanted else []
        embedded = {n: np.asarray(v, dtype=np.float64) for n, v in zip(wanted, vectors, strict=True)}
        answered = [(pos, n) for pos, n in enumerate(selected) if n in embedded]
        if answered:
            alpha = np.asarray([choice.alpha[pos] for pos, _ in answered], dtype=np.float64)
            alpha = alpha / alpha.sum()
            if len(answered) < len(selected):
                missing = ", ".join(n for n in selected if n not in embedded)
                notice(ctx, f"step {step}: {missing} gave no answer; alpha renormalised over the others", "warning")
            x_next = context_vector(alpha, np.asarray([embedded[n] for _, n in answered]))
        else:
            notice(ctx, f"step {step}: no routed agent answered; the context vector stays as it was", "warning")
            alpha, x_next = np.zeros(0), x
        responses = [(n, results[n].public) for _, n in answered]
        entropy: dict[str, float] = {}
        if self._dense:
            for n in self.names:
                value = predictive_entropy(results[n].top_logprobs) if n in results else None
                if value is not None:
                    entropy[n] = round(value, 6)
            if not entropy and any(r.status == CallStatus.DONE for r in results.values()):
                why = "the endpoint returned no logprobs, which the entropy signal needs"
                notice(ctx, f"test-time training is off: {why}; routing goes on sparse", "warning")
                if self._ttt is not None:
                    self._ttt.unavailable = why
                self._dense = False
                self.trace = None
            elif self.trace is not None:
                from core.methods.dmoa.train import TraceStep

                self.trace.steps.append(
                    TraceStep(
                        [embedded[n].tolist() if n in embedded else None for n in self.names],
                        [entropy.get(n) for n in self.names],
                    )
                )
        next_state = StepState(responses, x_next, [n for _, n in answered], [float(a) for a in alpha])
        return next_state, entropy

    # --- test-time training --------------------------------------------------------------------
    async def _end_ttt(self, *, completed: bool) -> None:
        """Give back this run's dense slot (with its trace when it finished); the last one to come back
        updates the router. A cancelled run gives its slot back without a trace and trains nothing."""
        state = self._ttt
        if state is None or not self._claim_open:
            return
        self._claim_open = False
        state.release(self.trace if completed else None)
        if completed and state.ready:
            await update_router(self.ctx, self.router, state)


def _floats(values: Any) -> list[float]:
    """JSON-friendly, finite floats (a session file holds no NaN or infinity)."""
    out = []
    for v in np.asarray(values, dtype=np.float64).reshape(-1).tolist():
        out.append(round(v, 6) if math.isfinite(v) else 0.0)
    return out


class _DmoaOptions(MethodOptions):
    """DMoA's options (arXiv 2605.15706, §4: the router's K, tau and L_max; Alg. 2's test-time training)."""

    router: str = choice("gru", ROUTERS, "gru (the paper's), llm (the Manager model selects), semantic")
    tau: float = Field(DEFAULT_TAU, ge=0.01, le=1.0, description="routing temperature in softmax(z/tau)")
    k: int = Field(0, ge=0, le=64, description="K, the most agents a step routes (0: 4, or N-1 for a smaller pool)")
    l_max: int = Field(DEFAULT_L_MAX, ge=1, le=50, description="L_max, the most steps")
    adaptive_k: bool = Field(True, description="k_i by the 1/N rule (false: always K, the paper's ablation)")
    ttt: int = Field(0, ge=0, le=1000,
                     description="test-time training: the first N runs go dense, then the router is updated")
    top_logprobs: int = Field(DEFAULT_TOP_LOGPROBS, ge=2, le=20, description="top-k logprobs asked for on dense steps")
    seed: int = Field(0, ge=0, description="seed of the untrained router's initialisation and of training")
    weights_dir: str = Field("", description="folder of the router weights (default: the user data dir)")
    collect: bool = Field(False, description="run densely and keep the trace (what swarm-tui train dmoa does)")
    prompt_order: str = choice(
        PromptOrder.CONVERSATION, THREAD_ORDERS,
        "conversation: each agent (the pool's, the Summarizer, the Selector) keeps one growing chat, each step "
        "appending its request and the kept reply, so a server's prefix cache prefills each token once; paper: "
        "every request rebuilt from the profile, the query and the previous step's responses",
    )
    query_in: str = choice(
        QueryPlace.SYSTEM, QUERY_IN,
        "where an agent reads the problem: system (the paper's P_sys = (Profile, P_usr)) or user "
        "(the user message, beside the previous step's responses)",
    )


DmoaOptions = with_calls(_DmoaOptions, CALL_OPTIONS)


def _factory(options: dict[str, Any], team: Team) -> DmoaMethod:
    return DmoaMethod(options, team)


DMOA = register(
    MethodInfo(
        name=NAME,
        fidelity=FIDELITY,  # where it departs from its paper
        demo="core.methods.dmoa.demo:DEMO",  # its scripted replies (--demo, bench --demo)
        summary="a router over MiniLM picks a sparse set of agents each step; a summarizer decides when to stop",
        graph_shape=GraphShape.SELECTION,
        factory=_factory,
        options_model=DmoaOptions,
        unit="step",
        substep="phase",
        limit_option="l_max",
        layer="",  # a step's selected experts answer together: no tiers
        steering=frozenset({SteerKind.FORCE, SteerKind.EXCLUDE, SteerKind.NOTE, SteerKind.STOP}),
        steering_why=dict.fromkeys(
            (SteerKind.PIN, SteerKind.CUT, SteerKind.RELEASE, SteerKind.GOAL),
            "its router selects the agents of each step: force or exclude an agent at the next step instead",
        ),
        paper="Differentiable Mixture-of-Agents (Wu et al., arXiv 2605.15706), §4, Alg. 1-2",
    )
)
