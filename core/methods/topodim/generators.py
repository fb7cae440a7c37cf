"""TopoDIM's graph generators: how the one typed graph of a run is drawn (TopoDIM, Sun et al., §3.1-3.2).

* ``random`` — the paper's "w/ Rand" ablation (Table 3): relations drawn uniformly (p(none)
  configurable), every structural rule applied, seeded per problem.
* ``prior`` — the LLM-written prior graph (§3.2 "initialized by an advanced LLM"): the Manager proposes
  typed edges with a confidence in one JSON call; the confidence is p for eq. 8.
* ``policy`` / ``decentralized`` — the generator network (eq. 4-7, core.methods.topodim.policy) or its
  distilled per-agent policies (§3.4); untrained they run from a seeded initialisation.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)
from core.methods.registry import MethodError
from core.methods.topodim.prompts import PRIOR_SLOTS, prior_messages
from core.routing.topodim import EDGE_TYPES, NONE, RELATIONS, TypedGraph, build_graph, decode, proposal_decisions
from core.runtime.copies import folded_slots, is_slot
from core.runtime.engine import AgentResult, RunAborted
from core.runtime.parsing import ParseError, TemplateCopied, extract_json_object
from core.runtime.rosters import Role
from core.runtime.run_context import notice

if TYPE_CHECKING:
    from core.methods.topodim.policy import PolicySample, TopoDIMPolicy
    from core.runtime.run_context import RunContext

CALL_GRAPH = "typed-graph"  # the Manager's one call of the prior generator
GENERATORS = ("prior", "random", "policy", "decentralized")
POLICY_GENERATORS = ("policy", "decentralized")

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
    _refuse_copied_edges(edges)
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
            confidence = float(raw)  # type: ignore[arg-type]  # anything a model wrote: float() is the check
        except (TypeError, ValueError):
            confidence = math.nan
        if not math.isfinite(confidence):
            ignored.append(f"edge {position + 1}: confidence {raw!r} is not a number (0.5 used)")
            confidence = 0.5
        kind_text = str(kind).strip().lower()
        out.append((str(src).strip(), str(dst).strip(), _TYPE_ALIASES.get(kind_text, kind_text), confidence))
    return PriorProposal(out, ignored)




_SLOTS = folded_slots(PRIOR_SLOTS)


def _refuse_copied_edges(edges: list[Any]) -> None:
    """Every proposed edge names a slot of the shape, not an agent: the reply copied it (TemplateCopied: asked
    once more, then no graph; issue 44). One copied edge among real ones is only ignored, as any bad item."""
    fields = ("src", "dst", "type", "from", "to")
    copied = [item for item in edges if isinstance(item, dict)
              and any(is_slot(str(item.get(f, "")), _SLOTS) for f in fields if item.get(f) is not None)]
    if edges and len(copied) == len(edges):
        raise TemplateCopied(["src", "dst", "type"], "name the agents of the team and the link types")


@dataclass
class Generated:
    graph: TypedGraph
    seed: int
    temperature: float | None = None
    weights: str = ""
    sample: PolicySample | None = None

    def shown(self, generator: str) -> str:
        """What actually drew the graph (a policy that could not run fell back)."""
        if generator not in POLICY_GENERATORS:
            return generator
        if self.sample is not None:
            return "policy"
        return "decentralized" if "decentralised local policies" in self.weights else "random"


def abort_if_unreachable(result: AgentResult) -> None:
    """End the run when the endpoint is gone or refuses us (no later call can succeed); any other failed
    call has been noticed, and the schedule goes on without its output."""
    if result.connection_failed:
        raise RunAborted(result.error)


class GraphGenerator:
    """The generator a run's options chose, with its options; ``generate`` draws one graph."""

    def __init__(
        self,
        generator: str,
        *,
        alpha: float,
        edge_types: list[str],
        p_none: float,
        temperature: float,
        seed: int,
        weights: str,
        policy: TopoDIMPolicy | None = None,
        sample_seed: int | None = None,
    ) -> None:
        self.generator = generator
        self.alpha = alpha
        self.edge_types = edge_types
        self.p_none = p_none
        self.temperature = temperature
        self.seed = seed
        self.weights = weights
        self.policy = policy  # a trainer's live policy; otherwise the weights file (or a seeded one)
        self.sample_seed = sample_seed  # a trainer's own seed per sample; otherwise from the problem

    async def generate(self, ctx: RunContext, roles: dict[str, Role], decider: str) -> Generated:
        """The typed graph for this run's problem over the agents ``roles`` names (in order)."""
        self.ctx, self.roles, self.names, self.decider = ctx, roles, list(roles), decider
        seed = self.sample_seed if self.sample_seed is not None else problem_seed(self.seed, ctx.spec.problem)
        rng = np.random.default_rng(seed)
        if self.generator == "prior":
            return await self._prior(seed)
        if self.generator in POLICY_GENERATORS:
            generated = await self._policy(rng, seed)
            if generated is not None:
                return generated
        return Generated(build_graph(self.names, self._random(rng), self.alpha), seed)

    def _random(self, rng: np.random.Generator) -> list[Any]:
        """The "w/ Rand" ablation: p(none) = p_none, the rest shared equally by the allowed types."""
        share = (1.0 - self.p_none) / len(self.edge_types)
        base = [self.p_none if r == NONE else (share if r in self.edge_types else 0.0) for r in RELATIONS]
        return decode(self.names, lambda i, j: base, self.edge_types, rng)

    async def _prior(self, seed: int) -> Generated:
        ctx = self.ctx
        messages = prior_messages(self.decider, self.roles, ctx.spec.team.name, ctx.spec.problem, self.edge_types)
        result, proposal = await ctx.call(
            self.decider, CALL_GRAPH, messages, kind="decider",
            parser=parse_prior, json_mode=True,
        )
        abort_if_unreachable(result)
        if proposal is None:
            notice(ctx, "TopoDIM: the Manager proposed no usable typed graph: every agent answers alone", "warning")
            return Generated(build_graph(self.names, [], self.alpha, ["no usable graph in the reply"]), seed)
        canonical = {n.lower(): n for n in self.names}  # "developer" is the Developer
        edges = [(canonical.get(a.lower(), a), canonical.get(b.lower(), b), k, c) for a, b, k, c in proposal.edges]
        decisions, ignored = proposal_decisions(self.names, edges, self.edge_types)
        ignored = [*proposal.ignored, *ignored]
        if ignored:
            shown = "; ".join(ignored[:3]) + (f"; and {len(ignored) - 3} more" if len(ignored) > 3 else "")
            notice(ctx, f"TopoDIM prior graph: {len(ignored)} proposed edge(s) ignored ({shown})", "warning")
        return Generated(build_graph(self.names, decisions, self.alpha, ignored), seed)

    async def _policy(self, rng: np.random.Generator, seed: int) -> Generated | None:
        import torch

        from core.methods.topodim.policy import (
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

        ctx = self.ctx
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
                    notice(ctx, f"TopoDIM policy: {exc}; using the untrained policy", "warning")
            if policy is None:
                policy = TopoDIMPolicy(seed=self.seed)
                weights = (
                    f"untrained (seeded initialisation, seed {self.seed}); "
                    "train it with: swarm-tui train topodim DATASET"
                )
            notice(ctx, f"TopoDIM policy: {weights}", "info")
        if self.generator == "decentralized" and local is None:
            notice(ctx,
                "TopoDIM: no distilled local policies (swarm-tui train topodim DATASET --distill): "
                "the centralised policy draws the graph",
                "warning",
            )
        vector = np.asarray(await ctx.embed([ctx.spec.problem]), dtype=np.float32).reshape(-1)
        if vector.shape[0] != policy.task_dim or vector.shape[0] != TASK_DIM:
            notice(ctx,
                f"TopoDIM policy: the task embedding has {vector.shape[0]} dimensions, the policy expects "
                f"{policy.task_dim}: using the random generator instead",
                "warning",
            )
            return None
        prior = prior_edges(ctx.spec.team.name, self.names)
        task = torch.from_numpy(vector)
        with torch.no_grad():
            if local is not None:  # §3.4: each agent's own network draws its row; the same rules apply
                dists = local.distributions(self.names, policy.initial_states(self.names, task)).tolist()
            else:
                dists = policy.distributions(self.names, prior, task, self.temperature).tolist()
        decisions = decode(self.names, lambda i, j: dists[i][j], self.edge_types, rng)
        if local is not None:
            graph = build_graph(self.names, decisions, self.alpha)
            return Generated(graph, seed, None, f"{weights}; drawn by the decentralised local policies")
        index = {n: i for i, n in enumerate(self.names)}
        sample = PolicySample(
            names=list(self.names),
            prior=prior,
            task=vector.tolist(),
            temperature=self.temperature,
            choices=[(index[d.src], index[d.dst], RELATIONS.index(d.relation), d.mask) for d in decisions],
        )
        graph = build_graph(self.names, decisions, self.alpha)
        return Generated(graph, seed, self.temperature, weights, sample)
