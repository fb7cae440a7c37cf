"""TopoDIM (Sun et al., "One-shot Topology Generation of Diverse Interaction Modes for Multi-Agent
Systems"): one typed graph per problem, generated once, then one pass over it.

Each ordered pair of agents gets a relation from {none, conditioned, feedback, debate} (§3.1); the
graph is sparsified (eq. 8), agents without an edge do not run (eq. 9), and the schedule is the paper's
breadth-first traversal with feedback and debate exchanges (§3.2, App. B). A decision-maker (the
team's Manager) reads every kept agent's latest answer and writes the final answer (Fig. 13). There is
no second round (Alg. 1 l.20).

Generators (``[strategy.topodim] generator``):

* ``random`` — the paper's "w/ Rand" ablation (Table 3): relations drawn uniformly (p(none)
  configurable), every structural rule applied, seeded per problem.
* ``prior`` — the LLM-written prior graph (§3.2 "initialized by an advanced LLM"): the Manager proposes
  typed edges with a confidence in one JSON call; the confidence is p for eq. 8.
* ``policy`` — the generator network (eq. 4–7, core.methods.topodim_policy), trained with
  ``swarm-tui train topodim``; untrained it runs from a seeded initialisation.

The pure graph work (mask, sparsification, node filter, schedule, diversity) is core.routing.topodim.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.evaluation.extract import docstring_examples, latest_code
from core.evaluation.math_answers import answer_or_text, extract_answer
from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)
from core.methods.registry import MethodError, MethodInfo, OptionSpec, call_options, call_tables, one_unit, register
from core.methods.topodim_events import TopoDIMCall, TopoDIMGraph, describe_call
from core.methods.topodim_steer import TopoDIMSteering
from core.routing.topodim import (
    EDGE_TYPES,
    MODE_CHALLENGE,
    MODE_DEFEND,
    MODE_EVALUATE,
    MODE_FINAL,
    MODE_REVISE,
    MODE_SOLUTION,
    MODES,
    NONE,
    RELATIONS,
    CallStep,
    TypedGraph,
    build_graph,
    decode,
    histogram,
    proposal_decisions,
    r_div,
    schedule,
    to_routing,
)
from core.runtime import events as ev
from core.runtime.context import Messages, Shrink, prompt_chars
from core.runtime.control import BOUNDARY_PHASE, BOUNDARY_ROUND
from core.runtime.domains import Domain, Role
from core.runtime.engine import STATUS_DONE, Evaluation, RunAborted
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.parsing import ParseError, extract_json_object
from core.runtime.steering import SteerKind

if TYPE_CHECKING:
    from core.methods.topodim_policy import PolicySample, TopoDIMPolicy
    from core.runtime.engine import AgentResult, SwarmEngine

NAME = "topodim"
CALL_GRAPH = "typed-graph"  # the Manager's one call of the prior generator
CALLS = (*MODES, CALL_GRAPH)  # every call label this method sends
MARK = "one-shot typed interaction graph"  # in every system prompt, so scripts can tell our calls apart
GENERATORS = ("prior", "random", "policy", "decentralized")
POLICY_GENERATORS = ("policy", "decentralized")
PEER_CHARS = 8000  # at most this much of one teammate's answer is quoted in another's prompt
MIN_PEER_CHARS = 200  # the least of it quoted when the prompt must fit a small context

# TopoDIM runs with five agents (§4.1). The domains' teams have three or four workers; these roles fill
# a team up, taken in order (the code ones from the paper's code roster, App. G; the others from its
# general pool, METHODS.md §1.1).
EXTRA_ROLES: dict[str, tuple[Role, ...]] = {
    "code": (
        Role(
            "BugFixer",
            "Bug Fixer",
            "Find the defects in the code at hand, say what is wrong and give a corrected, complete version.",
            "I need the current implementation and the failing cases.",
            "I provide a corrected implementation and the list of defects fixed.",
        ),
        Role(
            "ProjectManager",
            "Project Manager",
            "Turn the task into requirements and acceptance checks; keep the solution simple and complete.",
            "I need the task and the team's drafts.",
            "I provide the requirements and the acceptance checks.",
        ),
    ),
    "math": (
        Role(
            "Mathematician",
            "Mathematician",
            "Solve the problem independently, by another route when there is one, and compare the results.",
            "I need the problem and the team's derivation to compare with.",
            "I provide an independent derivation and its result.",
        ),
        Role(
            "Programmer",
            "Programmer",
            "Check the numbers as a program would: enumerate small cases, compute exactly, report the value.",
            "I need the quantities to compute.",
            "I provide exact computed values for the quantities in question.",
        ),
        Role(
            "Critic",
            "Critic",
            "Find the step most likely to be wrong: a dropped case, a sign, a claim without justification.",
            "I need a derivation to scrutinise.",
            "I provide the weakest steps of a derivation and why.",
        ),
    ),
    "general": (
        Role(
            "Expert",
            "Knowledgeable Expert",
            "Bring the facts and the established practice that bear on the question.",
            "I need the question's scope.",
            "I provide the relevant facts and practice.",
        ),
        Role(
            "Economist",
            "Economist",
            "Weigh costs, benefits and incentives, with rough numbers where they help.",
            "I need the options to weigh.",
            "I provide a cost-benefit view of the options.",
        ),
        Role(
            "Historian",
            "Historian",
            "Recall how similar decisions played out before and what that teaches.",
            "I need the decision at hand.",
            "I provide precedents and their lessons.",
        ),
    ),
}

_FORMAT = {
    "code": "Write plain text, not JSON. Whenever you give code, give the complete solution (every function "
    "it needs, with its imports) in one ```python block.",
    "math": "Write plain text, not JSON. Reason step by step and end every answer with the final result as "
    "\\boxed{...}.",
    "general": "Write plain text, not JSON. Be concrete and brief, and end with your conclusion.",
}
_FINAL_FORMAT = {
    "code": "Give the final solution as complete code (every function with its imports) in one ```python block.",
    "math": "End with the final answer alone as \\boxed{...}.",
    "general": "Give one complete, direct final answer.",
}
_TYPE_ALIASES = {
    "conditioned": "conditioned",
    "conditional": "conditioned",
    "condition": "conditioned",
    "cond": "conditioned",
    "feedback": "feedback",
    "fbk": "feedback",
    "evaluate": "feedback",
    "evaluation": "feedback",
    "debate": "debate",
    "dbt": "debate",
}


def team_roles(domain: Domain, size: int) -> list[Role]:
    """The first ``size`` of the domain's workers followed by TopoDIM's extra roles."""
    return [*domain.workers, *EXTRA_ROLES.get(domain.name, ())][:size]


def problem_seed(seed: int, problem: str) -> int:
    """A sampler seed from the option seed and the problem text: the same problem draws the same graph
    (48 bits, so a session stores it exactly)."""
    digest = hashlib.sha256(f"{seed}\n{problem}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def parse_edge_types(text: str) -> list[str]:
    """``conditioned,feedback`` -> the allowed edge types, in R's order. MethodError on a bad value."""
    given = [part.strip().lower() for part in str(text).replace("+", ",").split(",") if part.strip()]
    unknown = [g for g in given if _TYPE_ALIASES.get(g) is None]
    if unknown or not given:
        raise MethodError(
            f"[strategy.topodim] edge_types must list some of {', '.join(EDGE_TYPES)}, got {text!r}"
        )
    chosen = {_TYPE_ALIASES[g] for g in given}
    return [t for t in EDGE_TYPES if t in chosen]


# --- the prior generator's reply ------------------------------------------------------------------


@dataclass
class PriorProposal:
    edges: list[tuple[str, str, str, float]]
    ignored: list[str] = field(default_factory=list)


def parse_prior(text: str) -> PriorProposal:
    """The Manager's typed graph: {"edges": [{"src", "dst", "type", "confidence"}]}. ParseError when
    there is no edge list at all (the reply is then asked for once more); bad items are skipped."""
    found = extract_json_object(text)
    edges = found.get("edges")
    if edges is None:
        edges = next((v for k, v in found.items() if k.strip().lower() in ("graph", "links")), None)
    if not isinstance(edges, list):
        raise ParseError('missing list "edges" of {"src", "dst", "type", "confidence"} objects')
    out: list[tuple[str, str, str, float]] = []
    ignored: list[str] = []
    for position, item in enumerate(edges):
        if not isinstance(item, dict):
            ignored.append(f"edge {position + 1}: not an object")
            continue
        src, dst = item.get("src", item.get("from")), item.get("dst", item.get("to"))
        kind = item.get("type", item.get("relation", item.get("kind")))
        if not all(isinstance(v, str) and v.strip() for v in (src, dst, kind)):
            ignored.append(f"edge {position + 1}: src, dst and type must be names")
            continue
        raw = item.get("confidence", item.get("p", 0.5))
        try:
            confidence = float(raw)
        except (TypeError, ValueError):
            confidence = math.nan
        if not math.isfinite(confidence):
            ignored.append(f"edge {position + 1}: confidence {raw!r} is not a number (0.5 used)")
            confidence = 0.5
        kind_text = str(kind).strip().lower()
        out.append((str(src).strip(), str(dst).strip(), _TYPE_ALIASES.get(kind_text, kind_text), confidence))
    return PriorProposal(out, ignored)


def usable_text(result: AgentResult) -> str:
    """A call's answer as text. A model that answers in the engine's JSON work shape anyway
    ({"public": ...}) is unwrapped rather than quoted raw to the next agent."""
    text = (result.public or result.raw or "").strip()
    if text.startswith("{") and text.endswith("}"):
        try:
            data = json.loads(text)
        except ValueError:
            return text
        if isinstance(data, dict) and isinstance(data.get("public"), str) and data["public"].strip():
            extra = data.get("answer")
            answer = f"\n\nFinal answer: \\boxed{{{extra}}}" if isinstance(extra, str | int | float) and extra else ""
            return data["public"].strip() + answer
    return text


def _abort_if_unreachable(result: AgentResult) -> None:
    """End the run when the endpoint is gone or refuses us (no later call can succeed); any other failed
    call has been noticed, and the schedule goes on without its output."""
    if result.connection_failed:
        raise RunAborted(result.error)


def solution_code(text: str) -> str:
    """The code in an answer when it defines something (a function or class): a tester's bare asserts
    are not a candidate solution."""
    code = latest_code([text])
    try:
        tree = ast.parse(code) if code else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    if tree is None or not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for n in tree.body):
        return ""
    return code


def clip(text: str, limit: int = PEER_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… (cut: {len(text) - limit} more characters)"


def clip_shrink(make: Callable[[int], Messages]) -> Shrink:
    """TopoDIM's own rule for a prompt over the model's context: every teammate's text it quotes is clipped
    (clip) to one smaller limit, the largest that fits; None when even the smallest does not shrink it."""
    def shrink(most_chars: int) -> Messages | None:
        low, high = MIN_PEER_CHARS, PEER_CHARS
        best = make(low)
        if prompt_chars(best) >= prompt_chars(make(PEER_CHARS)):
            return None
        while low < high:  # the largest limit whose prompt fits
            middle = (low + high + 1) // 2
            candidate = make(middle)
            if prompt_chars(candidate) <= most_chars:
                low, best = middle, candidate
            else:
                high = middle - 1
        return best

    return shrink


# --- the method ------------------------------------------------------------------------------------


@dataclass
class _Generated:
    graph: TypedGraph
    seed: int
    temperature: float | None = None
    weights: str = ""
    sample: PolicySample | None = None


CALL_OPTIONS = (
    *call_options("agent", "the agents' solution, review and debate calls", "work_call"),
    *call_options("decider", "the decision-maker's graph and final calls", "manager_call"),
)


class TopoDIMMethod:
    """One typed graph, one pass, one decision (TopoDIM Alg. 1, inference)."""

    name = NAME
    call_tables = call_tables(CALL_OPTIONS)  # each call kind's settings table, for the engine's call_limits

    def __init__(
        self,
        options: dict[str, Any],
        domain: Domain,
        *,
        policy: TopoDIMPolicy | None = None,
        temperature: float | None = None,
        sample_seed: int | None = None,
    ) -> None:
        self.generator: str = options["generator"]
        self.alpha: float = float(options["alpha"])
        self.edge_types = parse_edge_types(options["edge_types"])
        self.p_none: float = float(options["p_none"])
        self.temperature: float = float(temperature if temperature is not None else options["temperature"])
        self.seed: int = int(options["seed"])
        self.size: int = int(options["agents"])
        self.weights: str = str(options["weights"])
        available = len(domain.workers) + len(EXTRA_ROLES.get(domain.name, ()))
        if self.size > available:
            raise MethodError(f"[strategy.topodim] agents must be at most {available} for the {domain.name} team")
        self.policy = policy  # a trainer's live policy; otherwise the weights file (or a seeded one)
        self.sample_seed = sample_seed  # a trainer's own seed per sample; otherwise from the problem
        self.last_graph: TypedGraph | None = None
        self.last_sample: PolicySample | None = None

    def roster(self, domain: Domain) -> tuple[str, list[str], dict[str, str]]:
        roles = {r.name: r.description for r in team_roles(domain, self.size)}
        roles[domain.manager.name] = (
            "The decision-maker: reads every kept agent's latest answer and writes the final answer"
            + (" (and, with the prior generator, proposes the typed graph)." if self.generator == "prior" else ".")
        )
        return domain.manager.name, [r.name for r in team_roles(domain, self.size)], roles

    # --- run --------------------------------------------------------------------------------
    async def run(self, rt: SwarmEngine) -> RunOutcome:
        self.rt = rt
        self.roles = {r.name: r for r in team_roles(rt.domain, self.size)}
        self.names = list(self.roles)
        self.decider = rt.domain.manager.name
        steer = TopoDIMSteering(rt, NAME, self.names, self.decider, lambda graph, steps: rt.emit(
            self._graph_event(replace(generated, graph=graph), steps)))
        rt.attach(reroute=self._no_reroute, steer=steer.apply)
        if rt.fork is not None:
            rt.notice("TopoDIM runs one round: a fork runs it again from the start", "info")
        await rt.checkpoint(BOUNDARY_ROUND)
        # One round only (Alg. 1 l.20): the round says so, whatever max_rounds the run was given.
        rt.begin_round(1, {**rt.control.params.as_dict(), "max_rounds": 1})
        rt.start_phase(ev.PHASE_ROUTING, f"{self.generator} generator: the typed graph, once for this problem")
        generated = await self._generate()
        graph = self.last_graph = generated.graph
        self.last_sample = generated.sample
        steps = schedule(self.names, graph, self.decider)
        routing = to_routing(graph, steps, rt.control.params.tau, rt.control.params.k_in)
        rt.emit(
            ev.TopologyBuilt(
                round=1, routing=routing.to_dict(), query_embeddings=[], key_embeddings=[], strategy=NAME
            )
        )
        rt.emit(self._graph_event(generated, steps))
        counts = histogram(graph.kept)
        plan = (
            f"One pass over the typed graph: {len(steps)} calls ({len(graph.active)} agents; "
            + ", ".join(f"{counts[k]} {k}" for k in EDGE_TYPES)
            + " edges), then the decision-maker answers."
        )
        if graph.fallback:
            plan = f"No edge survived: all {len(graph.active)} agents answer alone, then the decision-maker answers."
        rt.emit(ev.ManagerDecided(round=1, terminate=False, next_goal=plan, reasoning="", plan=True))
        steer.graph, steer.steps = graph, steps  # editable by the user until its calls begin
        await rt.checkpoint(BOUNDARY_PHASE)
        graph = self.last_graph = steer.graph
        steps, steer.executing = steer.steps, True
        answers = await self._execute(steps[:-1], graph)
        await rt.checkpoint(BOUNDARY_PHASE)
        return await self._decide(steps[-1], graph, answers)

    def _no_reroute(self) -> bool:
        self.rt.notice(
            "TopoDIM draws its graph once per problem: tau and k_in do not apply (its sparsity is the alpha option)",
            "info",
        )
        return False

    # --- generators -------------------------------------------------------------------------
    async def _generate(self) -> _Generated:
        seed = self.sample_seed if self.sample_seed is not None else problem_seed(self.seed, self.rt.spec.problem)
        rng = np.random.default_rng(seed)
        if self.generator == "prior":
            return await self._prior(seed)
        if self.generator in POLICY_GENERATORS:
            generated = await self._policy(rng, seed)
            if generated is not None:
                return generated
        return _Generated(build_graph(self.names, self._random(rng), self.alpha), seed)

    def _random(self, rng: np.random.Generator) -> list[Any]:
        """The "w/ Rand" ablation: p(none) = p_none, the rest shared equally by the allowed types."""
        share = (1.0 - self.p_none) / len(self.edge_types)
        base = [self.p_none if r == NONE else (share if r in self.edge_types else 0.0) for r in RELATIONS]
        return decode(self.names, lambda i, j: base, self.edge_types, rng)

    async def _prior(self, seed: int) -> _Generated:
        rt = self.rt
        team = "\n".join(f"- {r.name} ({r.title}): {r.description}" for r in self.roles.values())
        allowed = ", ".join(self.edge_types)
        messages = [
            {
                "role": "system",
                "content": f"You are {self.decider}, the coordinator of a team of {len(self.names)} agents solving "
                f"one {rt.domain.name} problem in a single pass over a {MARK} (TopoDIM). Before anyone "
                "works, you decide once how the agents interact. Reply with ONLY one valid JSON object, no "
                "prose and no Markdown fences.",
            },
            {
                "role": "user",
                "content": f"PROBLEM:\n{rt.spec.problem}\n\n"
                f"TEAM, in this order:\n{team}\n\n"
                "LINK TYPES (A->B):\n"
                "- conditioned: B answers after A and builds on A's answer.\n"
                "- feedback: B reviews A's answer, then A revises it.\n"
                "- debate: B challenges A's answer, A defends it, and B answers later with the debate in mind.\n"
                f"Use only these types: {allowed}. Conditioned and debate links must not form a cycle. "
                "An agent with no link does not work on this problem, so link only the agents that help.\n\n"
                "Give each link your confidence from 0 to 1 that it helps. Reply with exactly this shape:\n"
                '{"edges": [{"src": "AgentName", "dst": "AgentName", "type": "conditioned", "confidence": 0.8}]}',
            },
        ]
        result, proposal = await rt.agent_call(
            self.decider, CALL_GRAPH, messages, limits=rt.call_limits("decider"),
            parser=parse_prior, json_mode=True,
        )
        _abort_if_unreachable(result)
        if proposal is None:
            rt.notice("TopoDIM: the Manager proposed no usable typed graph: every agent answers alone", "warning")
            return _Generated(build_graph(self.names, [], self.alpha, ["no usable graph in the reply"]), seed)
        canonical = {n.lower(): n for n in self.names}  # "developer" is the Developer
        edges = [(canonical.get(a.lower(), a), canonical.get(b.lower(), b), k, c) for a, b, k, c in proposal.edges]
        decisions, ignored = proposal_decisions(self.names, edges, self.edge_types)
        ignored = [*proposal.ignored, *ignored]
        if ignored:
            shown = "; ".join(ignored[:3]) + (f"; and {len(ignored) - 3} more" if len(ignored) > 3 else "")
            rt.notice(f"TopoDIM prior graph: {len(ignored)} proposed edge(s) ignored ({shown})", "warning")
        return _Generated(build_graph(self.names, decisions, self.alpha, ignored), seed)

    async def _policy(self, rng: np.random.Generator, seed: int) -> _Generated | None:
        import torch

        from core.methods.topodim_policy import (
            TASK_DIM,
            PolicyLoadError,
            PolicySample,
            TopoDIMPolicy,
            default_weights_path,
            describe_weights,
            load_policy,
            local_from_checkpoint,
            prior_edges,
        )

        rt = self.rt
        policy = self.policy
        local = None
        if policy is not None:
            weights = "the trainer's current weights"
        else:
            path = Path(self.weights).expanduser() if self.weights else default_weights_path()
            weights = ""
            if path.exists():
                try:
                    policy, data = await asyncio.to_thread(load_policy, path)
                    weights = describe_weights(path, data)
                    if self.generator == "decentralized":
                        local = local_from_checkpoint(data, path)
                except PolicyLoadError as exc:
                    rt.notice(f"TopoDIM policy: {exc}; using the untrained policy", "warning")
            if policy is None:
                policy = TopoDIMPolicy(seed=self.seed)
                weights = (
                    f"untrained (seeded initialisation, seed {self.seed}); "
                    "train it with: swarm-tui train topodim DATASET"
                )
            rt.notice(f"TopoDIM policy: {weights}", "info")
        if self.generator == "decentralized" and local is None:
            rt.notice(
                "TopoDIM: no distilled local policies (swarm-tui train topodim DATASET --distill): "
                "the centralised policy draws the graph",
                "warning",
            )
        vector = np.asarray(await rt.embedder.aembed([rt.spec.problem]), dtype=np.float32).reshape(-1)
        if vector.shape[0] != policy.task_dim or vector.shape[0] != TASK_DIM:
            rt.notice(
                f"TopoDIM policy: the task embedding has {vector.shape[0]} dimensions, the policy expects "
                f"{policy.task_dim}: using the random generator instead",
                "warning",
            )
            return None
        prior = prior_edges(rt.domain.name, self.names)
        task = torch.from_numpy(vector)
        with torch.no_grad():
            if local is not None:  # §3.4: each agent's own network draws its row; the same rules apply
                dists = local.distributions(self.names, policy.initial_states(self.names, task)).tolist()
            else:
                dists = policy.distributions(self.names, prior, task, self.temperature).tolist()
        decisions = decode(self.names, lambda i, j: dists[i][j], self.edge_types, rng)
        if local is not None:
            graph = build_graph(self.names, decisions, self.alpha)
            return _Generated(graph, seed, None, f"{weights}; drawn by the decentralised local policies")
        index = {n: i for i, n in enumerate(self.names)}
        sample = PolicySample(
            names=list(self.names),
            prior=prior,
            task=vector.tolist(),
            temperature=self.temperature,
            choices=[(index[d.src], index[d.dst], RELATIONS.index(d.relation), d.mask) for d in decisions],
        )
        graph = build_graph(self.names, decisions, self.alpha)
        return _Generated(graph, seed, self.temperature, weights, sample)

    def _graph_event(self, generated: _Generated, steps: list[CallStep]) -> TopoDIMGraph:
        graph = generated.graph
        edges = [{"src": e.src, "dst": e.dst, "kind": e.kind, "p": round(e.p, 6), "status": "kept"} for e in graph.kept]
        edges += [{"src": e.src, "dst": e.dst, "kind": e.kind, "p": round(e.p, 6), "status": "pruned"}
                  for e in graph.pruned]
        edges += [{"src": e.src, "dst": e.dst, "kind": e.kind, "p": round(e.p, 6), "status": "masked"}
                  for e in graph.masked]
        decisions = [
            {
                "src": d.src,
                "dst": d.dst,
                "relation": d.relation,
                "p": round(d.p, 6),
                "dist": [round(x, 6) for x in d.dist],
                "masked": d.masked,
                "masked_p": round(d.masked_p, 6),
            }
            for d in graph.decisions
        ]
        return TopoDIMGraph(
            round=1,
            generator=self._generator_shown(generated),
            alpha=self.alpha,
            temperature=generated.temperature,
            seed=generated.seed,
            edge_types=list(self.edge_types),
            names=list(graph.names),
            decisions=decisions,
            edges=edges,
            active=list(graph.active),
            dropped=list(graph.dropped),
            fallback=graph.fallback,
            histogram=histogram(graph.kept),
            r_div=round(r_div(graph.kept), 6),
            calls=[
                {"index": s.index, "total": s.total, "agent": s.agent, "mode": s.mode, "partner": s.partner,
                 "kind": s.kind}
                for s in steps
            ],
            weights=generated.weights,
            ignored=graph.ignored[:20] + ([f"and {len(graph.ignored) - 20} more"] if len(graph.ignored) > 20 else []),
        )

    def _generator_shown(self, generated: _Generated) -> str:
        """What actually drew the graph (a policy that could not run fell back)."""
        if self.generator not in POLICY_GENERATORS:
            return self.generator
        if generated.sample is not None:
            return "policy"
        return "decentralized" if "decentralised local policies" in generated.weights else "random"

    # --- prompts ------------------------------------------------------------------------------
    def _system(self, name: str) -> str:
        role = self.roles[name]
        mates = ", ".join(n for n in self.names if n != name)
        return (
            f"You are {role.name}, the {role.title}, in a team of {len(self.names)} agents solving one "
            f"{self.rt.domain.name} problem in a single pass over a {MARK} (TopoDIM). Teammates: {mates}.\n"
            f"Your role: {role.description}\n"
            "Each request says what you do in it: answer the task, build on teammates' answers, review an "
            "answer, revise yours after a review, challenge an answer, or defend yours.\n"
            f"{_FORMAT.get(self.rt.domain.name, _FORMAT['general'])}"
        )

    def _peer(self, name: str, text: str, note: str = "", limit: int = PEER_CHARS) -> str:
        role = self.roles.get(name)
        title = f", the {role.title}" if role else ""
        return f"[{name}{title}{note}]\n{clip(text, limit)}"

    def _user(self, step: CallStep, body: str, ask: str) -> str:
        return f"PROBLEM:\n{self.rt.spec.problem}\n\n{body}{ask}"

    # --- execution (§3.2 "Execution order", App. B) ------------------------------------------------
    async def _execute(self, steps: list[CallStep], graph: TypedGraph) -> dict[str, str]:
        rt = self.rt
        answers: dict[str, str] = {}  # each agent's latest answer (solution, revision or defence)
        reviews: dict[tuple[str, str], str] = {}  # (source, reviewer) -> evaluation
        debates: dict[tuple[str, str], list[str]] = {}  # (source, challenger) -> [claim, challenge, defence]
        self.notes: dict[str, str] = {}  # how an agent's latest answer came about, for the decision-maker
        inputs = {n: [e.src for e in graph.kept if e.dst == n and e.kind == "conditioned"] for n in self.names}
        for position, step in enumerate(steps):
            if position:
                await rt.checkpoint(BOUNDARY_PHASE)
            what = describe_call(step.mode, step.agent, step.partner)
            rt.start_phase(ev.PHASE_WORK, f"call {step.index}/{step.total}: {what}")
            missing = self._request(step, answers, reviews, debates, inputs)[2]
            if missing:
                rt.emit(self._call_event(step, skipped=True, reason=missing))
                rt.notice(f"TopoDIM call {step.index}/{step.total} skipped: {missing}", "warning", step.agent)
                continue
            rt.emit(self._call_event(step))

            def make(limit: int, step: CallStep = step) -> Messages:
                body, ask, _ = self._request(step, answers, reviews, debates, inputs, limit)
                return [
                    {"role": "system", "content": self._system(step.agent)},
                    {"role": "user", "content": self._user(step, body, ask)},
                ]

            result, _ = await rt.agent_call(step.agent, step.mode, make(PEER_CHARS), shrink=clip_shrink(make),
                                            limits=rt.call_limits("agent"))
            _abort_if_unreachable(result)
            text = usable_text(result) if result.status == STATUS_DONE else ""
            if not text:
                continue
            if step.mode == MODE_SOLUTION:
                answers[step.agent] = text
                self.notes[step.agent] = ""
            elif step.mode == MODE_EVALUATE:
                reviews[(step.partner, step.agent)] = text
            elif step.mode == MODE_REVISE:
                answers[step.agent] = text
                self.notes[step.agent] = f", revised after {step.partner}'s review"
            elif step.mode == MODE_CHALLENGE:
                debates[(step.partner, step.agent)] = [answers.get(step.partner, ""), text]
            elif step.mode == MODE_DEFEND:
                debates.setdefault((step.agent, step.partner), ["", ""]).append(text)
                answers[step.agent] = text
                self.notes[step.agent] = f", after debating {step.partner}"
        return answers

    def _request(
        self,
        step: CallStep,
        answers: dict[str, str],
        reviews: dict[tuple[str, str], str],
        debates: dict[tuple[str, str], list[str]],
        inputs: dict[str, list[str]],
        limit: int = PEER_CHARS,
    ) -> tuple[str, str, str]:
        """(context blocks, the ask, what is missing so the call cannot be made). ``limit``: the most of one
        teammate's text quoted (clip), smaller when the prompt must fit the model's context."""
        agent, partner = step.agent, step.partner
        if step.mode == MODE_SOLUTION:
            blocks = []
            given = [self._peer(src, answers[src], limit=limit) for src in inputs[agent] if answers.get(src)]
            if given:
                blocks.append("ANSWERS YOU BUILD ON (conditioned inputs):\n" + "\n\n".join(given))
            for (src, challenger), turns in debates.items():
                if challenger == agent:
                    claim, challenge, *defence = [*turns, ""]
                    blocks.append(
                        f"YOUR DEBATE WITH {src}:\n{src}'s answer:\n{clip(claim, limit)}\n\n"
                        f"Your challenge:\n{clip(challenge, limit)}\n\n"
                        f"{src}'s reply:\n{clip(defence[0], limit) or '(no reply)'}"
                    )
            ask = (
                "Solve the problem from your role's angle. Use what your teammates gave you where it is right "
                "and fix it where it is not."
                if blocks
                else "Solve the problem from your role's angle."
            )
            return "".join(f"{b}\n\n" for b in blocks), ask, ""
        if step.mode == MODE_EVALUATE:
            if not answers.get(partner):
                return "", "", f"{partner} has no answer to review"
            return (
                f"ANSWER TO REVIEW:\n{self._peer(partner, answers[partner], limit=limit)}\n\n",
                "Review this answer for correctness and completeness. Name each concrete error and what should "
                "change; do not rewrite the whole answer.",
                "",
            )
        if step.mode == MODE_REVISE:
            review = reviews.get((agent, partner))
            if not review or not answers.get(agent):
                return "", "", f"no review from {partner} to revise with"
            return (
                f"YOUR ANSWER:\n{clip(answers[agent], limit)}\n\n"
                f"REVIEW FROM {self._peer(partner, review, limit=limit)}\n\n",
                "Revise your answer where the review is right (say briefly where you disagree) and give your "
                "complete revised answer.",
                "",
            )
        if step.mode == MODE_CHALLENGE:
            if not answers.get(partner):
                return "", "", f"{partner} has no answer to challenge"
            return (
                f"ANSWER TO CHALLENGE:\n{self._peer(partner, answers[partner], limit=limit)}\n\n",
                "Challenge it: point at its weakest step or assumption and give a counter-example or a better "
                "alternative. Be specific.",
                "",
            )
        if step.mode == MODE_DEFEND:
            turns = debates.get((agent, partner))
            if not turns or not turns[1] or not answers.get(agent):
                return "", "", f"no challenge from {partner} to answer"
            return (
                f"YOUR ANSWER:\n{clip(answers[agent], limit)}\n\n"
                f"CHALLENGE FROM {self._peer(partner, turns[1], limit=limit)}\n\n",
                "Answer the challenge: defend what holds, correct what does not, and give your complete answer "
                "at the end.",
                "",
            )
        return "", "", f"unknown mode {step.mode}"  # pragma: no cover - schedule() makes only the modes above

    def _call_event(self, step: CallStep, *, skipped: bool = False, reason: str = "") -> TopoDIMCall:
        return TopoDIMCall(
            round=1,
            index=step.index,
            total=step.total,
            agent=step.agent,
            mode=step.mode,
            partner=step.partner,
            kind=step.kind,
            skipped=skipped,
            reason=reason,
        )

    # --- aggregation (Fig. 13) ------------------------------------------------------------------
    async def _candidate_checks(self, answers: dict[str, str]) -> tuple[str, dict[str, bool]]:
        """Code domain with the sandbox on: run every candidate against the problem's own examples (as the
        public code's decision node does) and say which pass. (text for the decision-maker, verdicts)."""
        rt = self.rt
        if rt.domain.name != "code":
            return "", {}
        if rt.evaluator is None:
            return "SANDBOX: code execution is off in this run, so no candidate was run.\n\n", {}
        examples = docstring_examples(rt.spec.problem)
        if not examples:
            return "SANDBOX: the problem has no examples to run the candidates against.\n\n", {}
        from core.evaluation.sandbox import SandboxLimits, arun_code

        limits = getattr(rt.evaluator, "limits", None) or SandboxLimits()
        codes = {name: solution_code(text) for name, text in answers.items()}
        codes = {name: code for name, code in codes.items() if code}
        if not codes:
            return "SANDBOX: no candidate contains code to run.\n\n", {}
        try:
            results = await asyncio.gather(*(arun_code(code, examples, limits) for code in codes.values()))
        except OSError as exc:
            rt.notice(f"TopoDIM: the sandbox could not start ({exc}): candidates not checked", "warning")
            return "SANDBOX: the candidates could not be run.\n\n", {}
        lines, verdicts = [], {}
        for name, result in zip(codes, results, strict=True):
            verdicts[name] = result.passed
            lines.append(f"- {name}: {result.summary()}")
            rt.emit(
                ev.TestRun(
                    round=1,
                    outcome=str(result.outcome),
                    passed=result.passed,
                    detail=f"candidate of {name}: {result.summary()}",
                    failing_test=result.failing_test,
                    source_agent=name,
                    tests_agent="problem examples",
                    duration_s=round(result.duration_s, 3),
                )
            )
        text = f"SANDBOX: each candidate's code run against the problem's {len(examples)} examples:\n"
        return text + "\n".join(lines) + "\n\n", verdicts

    async def _decide(self, step: CallStep, graph: TypedGraph, answers: dict[str, str]) -> RunOutcome:
        rt = self.rt
        rt.start_phase(ev.PHASE_MANAGER, f"call {step.index}/{step.total}: the decision-maker reads every kept agent")
        checks, verdicts = await self._candidate_checks(answers)
        order = [n for n in graph.active if answers.get(n)]
        domain = rt.domain.name

        def make(limit: int) -> Messages:
            peers = "\n\n".join(self._peer(n, answers[n], self.notes.get(n, ""), limit) for n in order)
            return [
                {
                    "role": "system",
                    "content": f"You are {self.decider}, the decision-maker of a team of {len(self.names)} agents "
                    f"solving one {domain} problem in a single pass over a {MARK} (TopoDIM). You read every answer "
                    "the team produced and write the final answer. Think critically: the majority can be wrong, and "
                    f"a review or a debate may have exposed an error.\n"
                    f"{_FINAL_FORMAT.get(domain, _FINAL_FORMAT['general'])}",
                },
                {
                    "role": "user",
                    "content": f"PROBLEM:\n{rt.spec.problem}\n\n"
                    f"THE TEAM'S ANSWERS ({len(order)} agents):\n{peers or '(no answers)'}\n\n{checks}"
                    "Weigh these answers and write the final answer to the problem.",
                },
            ]

        rt.emit(self._call_event(step))
        result, _ = await rt.agent_call(self.decider, MODE_FINAL, make(PEER_CHARS),
                                        limits=rt.call_limits("decider"),
                                        shrink=clip_shrink(make))
        _abort_if_unreachable(result)
        text = usable_text(result) if result.status == STATUS_DONE else ""
        answer, source = self._answer(text, answers, verdicts)
        if not text:
            rt.notice("TopoDIM: the decision-maker gave no answer: the team's best answer is used", "warning")
        await self._final_check(answer)
        rt.emit(
            ev.ManagerDecided(
                round=1,
                terminate=True,
                next_goal="",
                reasoning=f"decision-maker read {len(order)} agents' answers"
                + ("" if text else "; it gave no answer, so the team's best answer stands"),
                final_answer=answer,
                status=result.status,
            )
        )
        rt.finish_round()
        counts = histogram(graph.kept)
        detail = (
            f"one-shot complete: {step.total} calls over {len(graph.kept)} typed edges "
            f"({counts['conditioned']} conditioned, {counts['feedback']} feedback, {counts['debate']} debate), "
            f"{len(graph.active)} of {len(graph.names)} agents"
        )
        if graph.fallback:
            detail = f"one-shot complete: no edge survived, {len(graph.active)} agents answered alone"
        return RunOutcome(EndReason.ONE_SHOT, detail, answer, source)

    def _answer(self, text: str, answers: dict[str, str], verdicts: dict[str, bool]) -> tuple[str, str]:
        """The decision-maker's answer in the domain's form, else the team's best (a candidate that passed
        the examples, then the answer role's, then anyone's)."""
        domain = self.rt.domain.name
        if text:
            if domain == "code":
                code = latest_code([text])
                if code:
                    return f"```python\n{code}\n```", "manager"
            elif domain == "math":
                found = extract_answer(text)
                if found:
                    return found, "manager"
            else:
                return text, "manager"
        passing = [n for n, ok in verdicts.items() if ok]
        ranked = [n for n in dict.fromkeys([*passing, self.rt.domain.answer_role, *answers]) if answers.get(n)]
        for name in ranked:
            if domain == "code":
                code = solution_code(answers[name])
                if code:
                    return f"```python\n{code}\n```", f"extracted:{name}"
            elif domain == "math":
                found = extract_answer(answers[name])
                if found:
                    return found, f"extracted:{name}"
            else:
                return answers[name], f"extracted:{name}"
        if text:
            return (answer_or_text(text) if domain == "math" else text), "manager"
        return "", ""

    async def _final_check(self, answer: str) -> None:
        """With the sandbox on (code): run the final answer against the problem's examples, so the run says
        whether they pass (RunFinished.solved)."""
        rt = self.rt
        if rt.domain.name != "code" or rt.evaluator is None:
            return
        code = latest_code([answer])
        examples = docstring_examples(rt.spec.problem)
        if not code or not examples:
            return
        from core.evaluation.sandbox import SandboxLimits, arun_code

        try:
            result = await arun_code(code, examples, getattr(rt.evaluator, "limits", None) or SandboxLimits())
        except OSError as exc:
            rt.notice(f"TopoDIM: the sandbox could not start ({exc}): the final answer was not run", "warning")
            return
        event = ev.TestRun(
            round=1,
            outcome=str(result.outcome),
            passed=result.passed,
            detail=f"final answer: {result.summary()}",
            failing_test=result.failing_test,
            source_agent=self.decider,
            tests_agent="problem examples",
            duration_s=round(result.duration_s, 3),
        )
        rt.emit(event)
        rt.record_evaluation(Evaluation(passed=result.passed, feedback=event.detail, events=[event]))


# --- registration -----------------------------------------------------------------------------------


def _factory(options: dict[str, Any], domain: Domain) -> TopoDIMMethod:
    return TopoDIMMethod(options, domain)


OPTIONS = (
    OptionSpec("generator", "choice", "prior", "how the typed graph is drawn: prior (the Manager writes it), "
               "random (the paper's w/ Rand ablation), policy (the R-GCN generator) or decentralized (its distilled "
               "per-agent policies, §3.4)", choices=GENERATORS),
    OptionSpec("alpha", "float", 0.7, "sparsity budget of eq. 8: keep the top (1 - alpha) of the sampled edges",
               low=0.0, high=1.0),
    OptionSpec("edge_types", "str", "conditioned,feedback,debate",
               "allowed edge types (Fig. 5a: conditioned | conditioned,feedback | conditioned,feedback,debate)"),
    OptionSpec("p_none", "float", 0.25, "random generator: probability of no edge for a pair", low=0.0, high=1.0),
    OptionSpec("temperature", "float", 0.5, "policy generator: decoder temperature of eq. 6 (training ends at 0.5)",
               low=0.05, high=5.0),
    OptionSpec("seed", "int", 0, "sampler seed (with the problem text it fixes the graph)", low=0),
    OptionSpec("agents", "int", 5, "team size (the paper runs 5: the domain's roles, then TopoDIM's extra roles)",
               low=2, high=6),
    OptionSpec("weights", "str", "",
               "policy/decentralized: weights file (default: the user data dir's swarm-tui/topodim/policy.pt)"),
    *CALL_OPTIONS,
)

register(
    MethodInfo(
        name=NAME,
        summary="one typed graph per problem (conditioned, feedback, debate edges), one pass, a decision-maker",
        factory=_factory,
        options=OPTIONS,
        unit="step",  # one pass over its typed graph: a step, not a DyTopo round
        unit_limit=one_unit,
        substep="call",
        steering=frozenset({SteerKind.EDGE_ADD, SteerKind.EDGE_REMOVE, SteerKind.STOP}),
        steering_why=dict.fromkeys(
            (SteerKind.PIN, SteerKind.CUT, SteerKind.RELEASE, SteerKind.GOAL),
            "its graph is typed and built once: add or remove a typed edge (edge_add, edge_remove) before it executes",
        ),
        paper="TopoDIM (Sun et al.): one-shot typed topology, eq. 4-12; prior/random generators untrained",
    )
)
