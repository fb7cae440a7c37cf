"""The papers' baselines (DyTopo §4 and Appendix D; TopoDIM and DMoA use the same set).

* ``single`` — one agent, one call, no team.
* ``single-turn`` — the DyTopo team for one round only.
* ``random`` — DyTopo's rounds over a random acyclic graph with as many edges as DyTopo chose.
* ``broadcast`` — everyone hears everyone (barrier delivery).
* ``chain`` — a fixed pipeline in roster order.
* ``star`` — everyone sends to one hub (the domain's answer role by default).

The graph baselines reuse DyTopo's round loop with another graph (core.routing.wiring), so the
comparison isolates the topology; ``single`` is a method of its own.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from pydantic import Field

from core.evaluation.extract import docstring_examples, latest_code
from core.evaluation.math_answers import answer_or_text
from core.evaluation.sandbox import arun_code
from core.llm.request_seed import REQUEST_SEED
from core.methods.baselines.fidelity import DEVIATIONS as FIDELITY
from core.methods.dytopo import CALL_OPTIONS, DyTopoMethod, memory_option, prompt_order_option
from core.methods.registry import (
    MethodInfo,
    MethodOptions,
    call_options,
    call_tables,
    no_unit_limit,
    one_unit,
    register,
    with_calls,
)
from core.routing.wiring import (
    BroadcastWiring,
    ChainWiring,
    DyTopoWiring,
    RandomWiring,
    StarWiring,
    WiringRule,
)
from core.runtime import events as ev
from core.runtime.control import StepBoundary
from core.runtime.engine import AgentResult
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.parsing import ParseError, extract_json_object
from core.runtime.rosters import Team
from core.runtime.run_context import begin_round, finish_round, start_phase
from core.runtime.steering import GRAPH_ACTIONS, ROUND_ACTIONS, SteerKind

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext

SOLO = "Solo"

# The graph baselines run DyTopo's rounds, so they take its round actions; their graph is the baseline itself.
_FIXED_GRAPH = "its graph is the baseline's own, not routed: a pin or cut would make it another method"
ROUND_STEERING: dict[str, Any] = {"steering": ROUND_ACTIONS, "steering_why": dict.fromkeys(GRAPH_ACTIONS, _FIXED_GRAPH)}
CALL_SINGLE = "single"

SOLO_SYSTEM = {
    "code": "You are an expert Python programmer solving one code problem on your own, in a single reply. "
    "Reply with the complete solution (the full function definition with the imports it needs) in one "
    "```python fenced block.",
    "math": "You are an expert mathematician solving one math problem on your own, in a single reply. "
    'Reply with ONLY one JSON object: {"reasoning": "a short derivation", "answer": "the final answer only, '
    'as short as possible (LaTeX allowed)"}.',
    "general": "You are an expert answering one question on your own, in a single reply. Reason briefly, "
    "then give a complete, direct answer.",
}


def solo_messages(domain: str, problem: str) -> list[dict[str, str]]:
    ask = "Solve it and give the final answer." if domain == "math" else "Solve it."
    return [
        {"role": "system", "content": SOLO_SYSTEM[domain]},
        {"role": "user", "content": f"PROBLEM:\n{problem}\n\n{ask}"},
    ]


def solo_answer(domain: str, text: str) -> str:
    """The answer in a single agent's reply: its code as written, or the math answer field."""
    if domain != "math":
        return text
    try:
        found = extract_json_object(text)
    except ParseError:
        found = {}
    value = found.get("answer") if isinstance(found, dict) else None
    if isinstance(value, str | int | float) and str(value).strip():
        return str(value).strip()
    return answer_or_text(text)


AGENT_CALL_OPTIONS = (call_options("agent", "the agent's calls", "work_call"),)


class SingleAgentMethod:
    """One agent, one call: the floor every team must beat (DyTopo Table 2, "single agent").

    With ``samples`` K > 1 it is self-consistency (Wang et al. 2023): K independent answers, then the
    majority answer (math) or, for code, the first sample that passes the problem's visible examples,
    else the most common code. It is the equal-budget single-agent baseline: choose K so its tokens
    match a team's (the benchmark report prints tokens per problem beside accuracy)."""

    name = "single"
    call_tables = call_tables(AGENT_CALL_OPTIONS)  # each call kind's settings table, for the engine's call_limits

    def __init__(self, samples: int = 1) -> None:
        self.samples = samples

    def roster(self, team: Team) -> tuple[str, list[str], dict[str, str]]:
        return "", [SOLO], {SOLO: SOLO_SYSTEM[team.name]}

    async def run(self, ctx: RunContext) -> RunOutcome:
        domain = ctx.spec.team.name
        await ctx.checkpoint(StepBoundary.ROUND)
        begin_round(ctx, 1)
        what = "one agent, one call" if self.samples == 1 else f"one agent, {self.samples} samples"
        start_phase(ctx, ev.Phase.WORK, what)
        await ctx.checkpoint(StepBoundary.PHASE)
        answers: list[str] = []
        base_seed = REQUEST_SEED.get()
        for index in range(self.samples):  # one after another: the agent's pane shows one reply at a time
            # Each sample its own request seed, or a seed-honouring server would repeat the first reply.
            token = REQUEST_SEED.set(base_seed + index) if base_seed is not None else None
            try:  # one call, then whether the run can go on (an unreachable endpoint ends it)
                result = (await ctx.gather({SOLO: _sample(ctx, domain)}))[SOLO]
            finally:
                if token is not None:
                    REQUEST_SEED.reset(token)
            if result.public:
                answers.append(ctx.state.answer[0] if domain == "code" else solo_answer(domain, result.public))
        finish_round(ctx)
        answers = [a for a in answers if a.strip()]
        if not answers:
            return RunOutcome(EndReason.FAILED, "no answer", "", "")
        if self.samples == 1:
            return RunOutcome(EndReason.SINGLE, what, answers[0], f"extracted:{SOLO}")
        if domain == "code":
            chosen, how = await _code_vote(answers, ctx.spec.problem)
        else:
            chosen, how = _majority(answers)
        return RunOutcome(EndReason.SINGLE, f"{what}: {how}", chosen, f"extracted:{SOLO}")


def _vote_key(answer: str) -> str:
    """Answers that differ only in spacing or math delimiters vote together."""
    return re.sub(r"\s+", "", answer).strip("$").lower()


def _majority(answers: list[str]) -> tuple[str, str]:
    """The most common answer (ties: the one given first) and how many samples gave it."""
    counts = Counter(_vote_key(a) for a in answers)
    best = max(counts.values())
    chosen = next(a for a in answers if counts[_vote_key(a)] == best)
    return chosen, f"majority {best}/{len(answers)}"


async def _code_vote(answers: list[str], problem: str) -> tuple[str, str]:
    """The first code that passes the problem's visible examples (its docstring), else the most common."""
    examples = docstring_examples(problem)
    if examples:
        for index, answer in enumerate(answers, 1):
            code = latest_code([answer])
            try:
                passed = bool(code) and (await arun_code(code, examples)).passed
            except OSError as exc:  # the sandbox cannot start, or refuses code it cannot isolate
                chosen, how = _majority(answers)
                return chosen, f"the examples were not run ({exc}); {how}"
            if passed:
                return answer, f"sample {index} passed the visible examples"
    chosen, how = _majority(answers)
    return chosen, f"none passed the visible examples; {how}"


def _star(options: dict[str, Any], team: Team) -> DyTopoMethod:
    hub = options["hub"] or team.answer_role
    if hub not in team.worker_names:
        from core.methods.registry import MethodError

        raise MethodError(f"[strategy.star] hub must be one of {', '.join(team.worker_names)}, got {hub!r}")
    return _rounds_over(StarWiring(hub), options)


def _rounds_over(graph: WiringRule, options: dict[str, Any]) -> DyTopoMethod:
    """DyTopo's rounds over a baseline's graph, with the memory rule and prompt order chosen."""
    return DyTopoMethod(graph, memory=options["memory"], prompt_order=options["prompt_order"])


class _SingleOptions(MethodOptions):
    samples: int = Field(1, ge=1, le=64, description=(
        "answers sampled; >1 is self-consistency (majority vote; code: first to pass the visible examples) — the "
        "equal-budget single-agent baseline"))


class _RoundsOptions(MethodOptions):
    """The baselines that run DyTopo's rounds over a fixed graph: its memory rule and prompt order."""

    memory: str = memory_option()
    prompt_order: str = prompt_order_option()


class _RandomOptions(MethodOptions):
    seed: int = Field(0, ge=0, description="random graph seed (the same seed gives the same graphs)")
    memory: str = memory_option()
    prompt_order: str = prompt_order_option()


class _StarOptions(MethodOptions):
    hub: str = Field("", description="the hub agent (default: the domain's answer role)")
    memory: str = memory_option()
    prompt_order: str = prompt_order_option()


SingleOptions = with_calls(_SingleOptions, AGENT_CALL_OPTIONS)
SingleTurnOptions = with_calls(MethodOptions, CALL_OPTIONS)
RoundsOptions = with_calls(_RoundsOptions, CALL_OPTIONS)
RandomOptions = with_calls(_RandomOptions, CALL_OPTIONS)
StarOptions = with_calls(_StarOptions, CALL_OPTIONS)

SINGLE = register(
    MethodInfo(
        name="single",
        summary="one agent, one call, no team (baseline)",
        demo="core.methods.baselines.demo:DEMO",  # its one call's scripted reply (the others share the rounds')
        uses_embeddings=False,
        factory=lambda options, team: SingleAgentMethod(options["samples"]),
        options_model=SingleOptions,
        unit="call",  # one model call (K with samples): no rounds to count
        unit_limit=no_unit_limit,
        substep="call",
        family="baseline",
        steering=frozenset({SteerKind.STOP}),
        steering_why={kind: "one agent answers in one call: nothing runs after it to steer" for kind in SteerKind},
    )
)
SINGLE_TURN = register(
    MethodInfo(
        name="single-turn",
        summary="the DyTopo team for one round only (baseline)",
        single_round=True,
        uses_embeddings=False,
        round_one_broadcast=True,
        # No memory option: one round, so no prompt shows an earlier round's memory.
        factory=lambda options, team: DyTopoMethod(DyTopoWiring(), name="single-turn", round_limit=1),
        unit_limit=one_unit,
        options_model=SingleTurnOptions,
        uses_tau=True,
        what_if=True,
        family="baseline",
        steering=ROUND_ACTIONS - {SteerKind.CONTINUE},
        steering_why={**ROUND_STEERING["steering_why"], SteerKind.CONTINUE: "it runs one round by definition"},
    )
)
RANDOM = register(
    MethodInfo(
        name="random",
        fidelity=FIDELITY,  # where it departs from its paper
        summary="DyTopo's rounds over a random acyclic graph with DyTopo's edge count (baseline)",
        round_one_broadcast=True,
        factory=lambda options, team: _rounds_over(RandomWiring(options["seed"]), options),
        options_model=RandomOptions,
        uses_tau=True,
        family="baseline",
        **ROUND_STEERING,
    )
)
BROADCAST = register(
    MethodInfo(
        name="broadcast",
        summary="every worker hears every other worker, delivered at the barrier (baseline)",
        round_one_broadcast=True,
        factory=lambda options, team: _rounds_over(BroadcastWiring(), options),
        options_model=RoundsOptions,
        family="baseline",
        **ROUND_STEERING,
    )
)
CHAIN = register(
    MethodInfo(
        name="chain",
        summary="a fixed pipeline in roster order (baseline)",
        round_one_broadcast=True,
        factory=lambda options, team: _rounds_over(ChainWiring(), options),
        options_model=RoundsOptions,
        family="baseline",
        **ROUND_STEERING,
    )
)
STAR = register(
    MethodInfo(
        name="star",
        summary="every worker sends to one hub, which works last (baseline)",
        round_one_broadcast=True,
        factory=_star,
        options_model=StarOptions,
        family="baseline",
        **ROUND_STEERING,
    )
)


async def _sample(ctx: RunContext, domain: str) -> AgentResult:
    """The one agent's call (one sample)."""
    result, _ = await ctx.call(SOLO, CALL_SINGLE, solo_messages(domain, ctx.spec.problem), json_mode=domain == "math",
                               kind="agent")
    return result
