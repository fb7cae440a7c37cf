"""TopoWeaver-R1 ("Reinforcing Difficulty-Aware Topology Evolution in Multi-Agent Competition-Level Code
Generation", an ICLR submission): an orchestrator writes the team as a layered DAG in YAML, the plan is
validated and run step by step, and rewritten from the test results of the turn before.

The untrained variant (the paper trains the orchestrator with SFT, then GRPO, §2.3): the orchestrator is
a prompted model (the paper's is Qwen2.5-3B after SFT and GRPO), on the run's endpoint or its own
(``orchestrator_model``, ``orchestrator_base_url``). One turn follows Algorithm 1 of the paper:

1. the orchestrator answers the task and the history of earlier turns with a YAML plan (eq. 1);
2. the plan is validated in the paper's order ([NO_YAML_FOUND], [YAML_PARSE_ERROR],
   [YAML_SCHEMA_INVALID], [YAML_LOGIC_INVALID]); an invalid plan uses up its turn and its tag reaches
   the next turn's prompt (Alg. 1, l. 6–9);
3. a valid plan is decoded into a layered DAG (eq. 2) and run layer by layer, the agents of a layer in
   parallel, each seeing the problem, its role, the last turn's summary, its own earlier outputs and
   the outputs it refs (eq. 15);
4. the tester's verdict is the sandbox run of the code it refs against the problem's examples plus its
   own cases; PASSED stops the run (Alg. 1, l. 13–14), anything else goes into the history.

Outside code, the role pool is planner / searcher / thinker / verifier and the verifier's verdict is
the answer check [App. C.5]. K turns (default 2, the paper's [App. B.2]); the run's max_rounds follows K.

This module is the plan loop and the plan's execution; the checks of step 4 are
core.methods.topoweaver.checks, what turns leave for later ones (H_k, View, Mem_i, the best answer)
core.methods.topoweaver.turns, and a fork's rebuild of them core.methods.topoweaver.replay.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import Field

from core.evaluation.math_answers import extract_answer
from core.evaluation.sandbox import SandboxLimits
from core.llm.urls import redact_url
from core.methods.registry import (
    GraphShape,
    MethodInfo,
    MethodOptions,
    call_options,
    call_tables,
    choice,
    register,
    with_calls,
)
from core.methods.topoweaver.checks import answer_check, code_check
from core.methods.topoweaver.copies import plan_reply
from core.methods.topoweaver.events import PlanProposed, TurnEnded
from core.methods.topoweaver.fidelity import DEVIATIONS as FIDELITY
from core.methods.topoweaver.plan import (
    EXECUTION_REWARD,
    TAG_SCHEMA,
    Plan,
    PlanAgent,
    Validation,
    density,
    fallback_plan,
    plan_routing,
    plan_yaml,
    validate_plan,
)
from core.methods.topoweaver.prompts import (
    CALL_AGENT,
    CALL_ORCHESTRATE,
    ORCHESTRATOR,
    agent_instructions,
)
from core.methods.topoweaver.replay import replay_history
from core.methods.topoweaver.steer import TopoWeaverSteering
from core.methods.topoweaver.threads import TopoWeaverRequests
from core.methods.topoweaver.turns import TurnHistory, TurnRecord
from core.runtime import events as ev
from core.runtime.agent_threads import THREAD_ORDERS, ThreadTurn
from core.runtime.config import DomainName
from core.runtime.context import Messages, Shrink
from core.runtime.control import StepBoundary
from core.runtime.engine import AgentResult, RunAborted
from core.runtime.events import CallStatus
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.parsing import is_template_copy, own_text
from core.runtime.prompts import PromptOrder
from core.runtime.rosters import Team
from core.runtime.run_context import begin_round, finish_round, notice, start_phase
from core.runtime.steering import SteerKind

if TYPE_CHECKING:
    from core.llm.client import LLMClient
    from core.runtime.run_context import RunContext

NAME = "topoweaver"
PHASE_ORCHESTRATE = "orchestrate"
PHASE_STEP = "step"
DEFAULT_TURNS = 2  # K [TopoWeaver-R1 B.2]


# A re-ask of the Orchestrator (a reply cut off at max_tokens) asks for its own format, never JSON.
COPIED_PLAN = "the plan copied the reply template's slots"  # twice (issue 44): no plan, never run


def refused_plan_notice(validation: Validation, *, fallback: bool) -> str:
    """The notice of a refused plan: what was refused, with its tag [TopoWeaver-R1 Table 1], and what happens
    next; one toast line at 160 columns, two at 80 (its Notice carries the turn). The validator's full message,
    the offender and the raw reply are in the turn's PlanProposed event (the method's view, the session,
    headless progress)."""
    then = "fallback plan runs" if fallback else "turn used up"
    return f"plan refused {validation.short_badge()}; {then}"
ORCHESTRATOR_REPLY_FORMAT = "the plan as one YAML block (```yaml ... ```) with the fields the instructions give"


CALL_OPTIONS = (
    call_options("orchestrator", "the Orchestrator's calls", "manager_call"),
    call_options("agent", "the plan's agents' calls", "work_call"),
)


class TopoWeaverMethod:
    name = NAME
    call_tables = call_tables(CALL_OPTIONS)  # each call kind's settings table, for the engine's call_limits

    def __init__(
        self,
        *,
        turns: int = DEFAULT_TURNS,
        orchestrator_model: str = "",
        orchestrator_base_url: str = "",
        fallback: bool = False,
        sandbox: SandboxLimits | None = None,
        prompt_order: str = PromptOrder.CONVERSATION,
    ) -> None:
        self.turns = turns
        self.prompt_order = prompt_order  # core.methods.topoweaver.threads
        self.orchestrator_model = orchestrator_model.strip()
        self.orchestrator_base_url = orchestrator_base_url.strip()
        self.fallback = fallback
        self.sandbox = sandbox or SandboxLimits(wall_seconds=10.0, cpu_seconds=10.0, memory_mb=512)
        self._client: LLMClient | None = None
        self.history = TurnHistory()  # H_k, every agent's memory, the best answer (core.methods.topoweaver.turns)

    def roster(self, team: Team) -> tuple[str, list[str], dict[str, str]]:
        # The agents join at run time, as the orchestrator's plans name them.
        return ORCHESTRATOR, [], {ORCHESTRATOR: "writes each turn's team as a layered DAG in YAML"}

    # --- the run ------------------------------------------------------------------------------
    async def run(self, ctx: RunContext) -> RunOutcome:
        self.ctx = ctx
        self.domain = ctx.spec.team.name
        self.requests = TopoWeaverRequests(ctx, self.domain, self.prompt_order)
        self.steer = TopoWeaverSteering(ctx, NAME, self._user_plan)
        ctx.attach(steer=self.steer.apply)
        self._waiting: TurnRecord | None = None
        try:
            self._client = await self._open_orchestrator()
            fork = ctx.spec.fork
            done = replay_history(ctx, fork.history, self.history, self.domain,
                                  self.requests) if fork is not None else 0
            return await self._run_turns(done)
        except (asyncio.CancelledError, RunAborted):
            self._leave_answer()  # the engine's answer on cancel or abort is then our best one
            raise
        finally:
            if self._client is not None:
                await self._client.close()

    async def _open_orchestrator(self) -> LLMClient | None:
        """A second client when the orchestrator has its own model or endpoint (same API key variable)."""
        if not self.orchestrator_model and not self.orchestrator_base_url:
            return None
        from core.llm.client import EndpointError

        client = self.ctx.connect(self.orchestrator_model or None, self.orchestrator_base_url or None,
                                  max_concurrency=1)
        try:
            model = await client.ensure_model()
        except EndpointError as exc:
            await client.close()
            raise RunAborted(f"the orchestrator's endpoint: {exc}") from None
        notice(self.ctx, f"the Orchestrator runs on {model} at {redact_url(client.base_url)}; the agents on "
               f"{self.ctx.spec.model}", "info")
        return client

    async def _call_orchestrator(self, messages: Messages, shrink: Shrink, turn: ThreadTurn | None) -> AgentResult:
        """The Orchestrator's call for this turn's plan (on its own client when it has one)."""
        reply, _ = await self.ctx.call(ORCHESTRATOR, CALL_ORCHESTRATE, messages, client=self._client,
                                       kind="orchestrator", parser=plan_reply, reply_format=ORCHESTRATOR_REPLY_FORMAT,
                                       shrink=shrink)
        _keep(turn, reply)
        return reply

    async def _run_turns(self, turn: int = 0) -> RunOutcome:
        """Turns after ``turn`` (0 for a fresh run, the fork's last kept turn for a fork)."""
        ctx = self.ctx
        if ctx.state.params.max_rounds != self.turns:
            ctx.record(replace(ctx.state.params, max_rounds=self.turns))  # the header and the bar count turns of K
        check = "the tester runs the code in the sandbox every turn (always on for this strategy)" if (
            self.domain == DomainName.CODE) else "the verifier's verdict is the answer check"
        notice(ctx, f"TopoWeaver-R1: up to {self.turns} turn(s); {check}", "info")
        if self.history.records and self.history.records[-1].passed:  # a fork from the turn that passed: nothing to do
            return self._finish(EndReason.PASSED, f"the check passed in turn {turn} (before the fork)")
        while True:
            turn += 1
            await ctx.checkpoint(StepBoundary.ROUND)
            if turn > ctx.state.params.max_rounds:
                return self._finish(EndReason.MAX_TURNS, f"{turn - 1} turn(s) used, none passed")
            begin_round(ctx, turn)
            record = await self._turn(turn)
            finish_round(ctx)
            if record.passed:
                what = ("the tester's sandbox run passed" if self.domain == DomainName.CODE else
                        "the verifier accepted the answer")
                return self._finish(EndReason.PASSED, f"{what} in turn {turn}")
            if turn >= ctx.state.params.max_rounds:
                return self._finish(EndReason.MAX_TURNS, f"{turn} turn(s) used, none passed (last: {record.status})")

    async def _turn(self, turn: int) -> TurnRecord:
        ctx = self.ctx
        start_phase(ctx, PHASE_ORCHESTRATE, f"turn {turn}: the Orchestrator writes the plan")
        messages, shrink, thread_turn = self.requests.orchestrator(turn, ctx.state.params.max_rounds,
                                                                   self.history.notes(self.domain))
        orchestrate = self._call_orchestrator(messages, shrink, thread_turn)
        # No reply at all, even after retries: the run ends.
        reply = (await ctx.gather({ORCHESTRATOR: orchestrate}))[ORCHESTRATOR]
        validation = Validation(TAG_SCHEMA, rule="copied", message=COPIED_PLAN) if is_template_copy(
            reply.error) else validate_plan(
            reply.raw, domain=self.domain, turn=turn, earlier=self.history.ran)
        record = TurnRecord(turn, validation, raw=reply.raw, plan=validation.plan)
        if record.plan is None and self.fallback:
            record.plan, record.fallback = self._fallback(turn), True
        self._emit_plan(turn, record)
        if not validation.valid:
            notice(ctx, refused_plan_notice(validation, fallback=record.fallback), "warning")
        self._waiting, self.steer.turn, self.steer.earlier = record, turn, self.history.ran  # a user may edit it now
        await ctx.checkpoint(StepBoundary.PHASE)
        self._waiting, self.steer.turn = None, 0
        if record.plan is not None:
            await self._execute(turn, record)
        else:
            record.status = validation.tag
        self.history.records.append(record)
        self._emit_turn(record)
        return record

    def _fallback(self, turn: int) -> Plan:
        retry = any(r.plan is not None for r in self.history.records)
        guess = next((r.plan.difficulty for r in reversed(self.history.records) if r.plan is not None), "interview")
        return fallback_plan(self.domain, guess, retry=retry)

    def _user_plan(self, turn: int, validation: Validation) -> None:
        """A person's plan (steering) runs in place of the Orchestrator's for this turn, shown as the turn's plan."""
        assert self._waiting is not None
        self._waiting.plan, self._waiting.fallback = validation.plan, False
        self._emit_plan(turn, TurnRecord(turn, validation, raw=validation.yaml_text, plan=validation.plan),
                        by_user=True)

    def _emit_plan(self, turn: int, record: TurnRecord, *, by_user: bool = False) -> None:
        v, plan = record.validation, record.plan
        shown = plan_yaml(plan) if record.fallback and plan is not None else v.yaml_text
        self.ctx.emit(
            PlanProposed(
                round=turn,
                raw=record.raw,
                yaml=shown,
                tag=v.tag,
                rule=v.rule,
                message=v.message,
                offender=v.offender,
                difficulty=plan.difficulty if plan is not None else "",
                n_max=plan.n_max if plan is not None else 0,
                steps=plan.layers() if plan is not None else [],
                notes=plan.notes if plan is not None and not record.fallback else "",
                density=density(plan).to_dict() if plan is not None else {},
                warnings=list(v.warnings),
                fallback=record.fallback,
                turns=self.ctx.state.params.max_rounds,
                by_user=by_user,
            )
        )

    # --- executing a plan (Alg. 1, ExecRun) -------------------------------------------------
    async def _execute(self, turn: int, record: TurnRecord) -> None:
        ctx, plan = self.ctx, record.plan
        assert plan is not None
        memory_turns = {a.id: max(t for t in self.history.memory[a.id] if t < turn) for a in plan.agents
                        if any(t < turn for t in self.history.memory.get(a.id, {}))}
        routing = plan_routing(plan, memory_turns)
        ctx.emit(ev.TopologyBuilt(round=turn, routing=routing.to_dict(), query_embeddings=[], key_embeddings=[],
                                 strategy=self.name))
        view = self.history.view(plan)
        outputs: dict[str, AgentResult] = {}
        for number, step in enumerate(plan.steps, start=1):
            if number > 1:
                await ctx.checkpoint(StepBoundary.PHASE)
            start_phase(ctx, PHASE_STEP,
                        f"turn {turn}, step {number}/{len(plan.steps)}: {', '.join(a.id for a in step)}")
            results = await ctx.gather({a.id: self._run_agent(turn, plan, a, outputs, view) for a in step})
            outputs.update(results)
            for agent in step:
                self.history.memory.setdefault(agent.id, {})[turn] = results[agent.id].public
        self.history.ran[turn] = [a.id for a in plan.agents]
        await ctx.checkpoint(StepBoundary.PHASE)
        check = await (code_check(ctx, turn, plan, outputs, self.sandbox) if self.domain == DomainName.CODE else
                       answer_check(ctx, plan, outputs, self.domain))
        self.history.keep_check(check)
        record.take_check(check)

    async def _run_agent(
        self, turn: int, plan: Plan, agent: PlanAgent, outputs: dict[str, AgentResult], view: str
    ) -> AgentResult:
        memory = sorted((t, text) for t, text in self.history.memory.get(agent.id, {}).items() if t < turn and text)
        reads: list[tuple[str, str]] = []
        for ref in agent.intra_refs:
            source = plan.agent(ref)
            kind = source.type if source is not None else "?"
            reads.append((f"{ref} ({kind})", outputs[ref].public if ref in outputs else ""))
        for name, ref_turn in agent.cross_refs:
            reads.append((f"{name}, turn {ref_turn}", self.history.memory.get(name, {}).get(ref_turn, "")))
        messages, shrink, thread_turn = self.requests.agent(agent, turn, len(plan.steps), view, memory, reads)
        told = agent_instructions(self.domain, agent, turn, len(plan.steps))
        result, _ = await self.ctx.call(
            agent.id, CALL_AGENT, messages, kind="agent", parser=own_text(told), tier=agent.step - 1, shrink=shrink,
        )
        _keep(thread_turn, result)
        return result

    # --- events and the answer -------------------------------------------------------------------
    def _emit_turn(self, record: TurnRecord) -> None:
        plan = record.plan
        self.ctx.emit(
            TurnEnded(
                round=record.turn,
                status=record.status,
                passed=record.passed,
                agents=len(plan.agents) if plan is not None else 0,
                steps=len(plan.steps) if plan is not None else 0,
                failing_test=record.failing_test,
                log=record.log,
                source_agent=record.source,
                reward=EXECUTION_REWARD.get(record.status),
                history=self.history.history_line(),
            )
        )

    def _finish(self, reason: EndReason, detail: str) -> RunOutcome:
        answer, source = self.history.final(self.domain)
        return RunOutcome(reason, detail, answer, source)

    def _leave_answer(self) -> None:
        """On cancel or abort the engine extracts the answer from the latest outputs: put ours last."""
        answer, source = self.history.final(self.domain)
        if not answer or not hasattr(self, "ctx"):
            return
        agent = source.removeprefix("extracted:")
        math = (extract_answer(answer) or answer) if self.domain == DomainName.MATH else ""
        self.ctx.record(AgentResult(agent, CallStatus.DONE, public=answer, answer=math), newest=True)


def run_metrics(events: list[ev.Event]) -> dict[str, float]:
    """Per-run figures for the benchmark: turns, the valid-plan rate, mean S_complex of the plans that ran."""
    plans = [e for e in events if isinstance(e, PlanProposed) and not e.by_user]
    if not plans:
        return {}
    out: dict[str, float] = {
        "turns": float(len(plans)),
        "valid_plan_rate": sum(p.valid for p in plans) / len(plans),
    }
    scores = [float(p.density["S_complex"]) for p in plans if p.valid and "S_complex" in p.density]
    if scores:
        out["s_complex"] = sum(scores) / len(scores)
    return out


def _build(options: dict[str, Any], team: Team) -> TopoWeaverMethod:
    return TopoWeaverMethod(
        turns=options["turns"],
        orchestrator_model=options["orchestrator_model"],
        orchestrator_base_url=options["orchestrator_base_url"],
        fallback=options["fallback"],
        prompt_order=options.get("prompt_order", PromptOrder.CONVERSATION),
    )


def _keep(turn: ThreadTurn | None, result: AgentResult) -> None:
    """A reply the run kept goes into its caller's conversation (a failed or copied one does not)."""
    if turn is not None and result.status == CallStatus.DONE:
        turn.keep(result.raw)


class _TopoWeaverOptions(MethodOptions):
    """TopoWeaver-R1's options (Algorithm 1's K turns; the orchestrator's own endpoint)."""

    turns: int = Field(DEFAULT_TURNS, ge=1, le=5, description="K, the most turns (the paper's 2); sets max_rounds")
    orchestrator_model: str = Field("", description="the orchestrator's model (default: the run's)")
    orchestrator_base_url: str = Field("", description="the orchestrator's endpoint (default: the run's)")
    fallback: bool = Field(False, description="run a difficulty template when the plan is invalid "
                           "(the paper just uses up the turn)")
    prompt_order: str = choice(
        PromptOrder.CONVERSATION, THREAD_ORDERS,
        "conversation: the Orchestrator and an agent whose id a later turn reuses each keep one growing chat "
        "(each call appends its request and the kept reply), so a server's prefix cache prefills each token "
        "once; paper: every request rebuilt with the whole history and memory",
    )


TopoWeaverOptions = with_calls(_TopoWeaverOptions, CALL_OPTIONS)

TOPOWEAVER = register(
    MethodInfo(
        name=NAME,
        fidelity=FIDELITY,  # where it departs from its paper
        demo="core.methods.topoweaver.demo:DEMO",  # its scripted replies (--demo, bench --demo)
        summary="an orchestrator writes the team as a YAML layered DAG each turn; validated, run, rewritten "
        "from the test results",
        tests_code_always=True,  # its tester runs the sandbox every turn in the code domain
        graph_shape=GraphShape.LAYERS,
        factory=_build,
        options_model=TopoWeaverOptions,
        unit="turn",
        substep="step",
        limit_option="turns",
        layer="step",  # the plan's steps, counted from 1 as the plans print them
        layer_base=1,
        steering=frozenset({SteerKind.PLAN, SteerKind.STOP}),
        steering_why=dict.fromkeys(
            (SteerKind.PIN, SteerKind.CUT, SteerKind.RELEASE, SteerKind.GOAL),
            "the Orchestrator's plan decides who runs and who reads whom: edit the plan (plan) before it runs",
        ),
        paper="TopoWeaver-R1 (ICLR 2026 submission): Algorithm 1 with a prompted, untrained orchestrator",
        metrics=run_metrics,
    )
)
