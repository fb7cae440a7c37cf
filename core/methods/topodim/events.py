"""TopoDIM's own events: the typed graph as generated (with every pair's distribution, the masked and
pruned draws, the call plan and eq. 10's diversity), and each scheduled call as it starts.

The shared TopologyBuilt event carries the graph every consumer already draws; these add what only
TopoDIM has. Registered with the event stream, so sessions, replay and ``--json`` carry them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from core.routing.topodim import CallMode
from core.runtime import events as ev

SHORT = {"conditioned": "cond", "feedback": "fbk", "debate": "dbt", "none": "∅"}


@ev._register
@dataclass(kw_only=True)
class TopoDIMGraph(ev.Event):
    """The one-shot typed graph of a run (§3.2) and its schedule."""

    type: ClassVar[str] = "topodim_graph"
    round: int
    generator: str  # random | prior | policy
    alpha: float  # sparsity budget (eq. 8)
    temperature: float | None  # decoder temperature (policy only, eq. 6)
    seed: int  # the per-problem sampler seed
    edge_types: list[str]  # the allowed types (Fig. 5a)
    names: list[str]  # node order
    # every pair the generator decided on: {src, dst, relation, p, dist: [none, cond, fbk, dbt], masked, masked_p}
    decisions: list[dict[str, Any]]
    # every drawn edge: {src, dst, kind, p, status: kept | pruned | masked}
    edges: list[dict[str, Any]]
    active: list[str]  # V_final (eq. 9)
    dropped: list[str]  # agents that do not run
    fallback: bool  # no edge survived: every agent answers alone
    histogram: dict[str, int]  # kept edges per type
    r_div: float  # eq. 10 over the kept edges
    # the call plan: {index, total, agent, mode, partner, kind}
    calls: list[dict[str, Any]]
    weights: str = ""  # policy: which weights were used (a trained file, or the seeded initialisation)
    ignored: list[str] = field(default_factory=list)  # prior: proposals that could not be used

    def progress_lines(self) -> list[str]:
        """What ``--headless`` prints for it."""
        kept = [e for e in self.edges if e["status"] == "kept"]
        counts = {s: sum(1 for e in self.edges if e["status"] == s) for s in ("pruned", "masked")}
        sampled = len(kept) + counts["pruned"]
        temp = f", temperature {self.temperature:.2f}" if self.temperature is not None else ""
        lines = [
            f"typed graph ({self.generator}, alpha {self.alpha:.2f}{temp}, seed {self.seed}): "
            f"kept {len(kept)} of {sampled} sampled edges; {counts['pruned']} pruned (eq. 8), "
            f"{counts['masked']} masked (eq. 7)"
        ]
        if self.weights:
            lines.append(f"  policy weights: {self.weights}")
        for e in kept:
            lines.append(f"  {e['src']} {_ARROW.get(e['kind'], '->')} {e['dst']}  {e['kind']} {e['p']:.2f}")
        if self.fallback:
            lines.append("  no edge left: every agent answers alone")
        if self.dropped:
            lines.append(f"  dropped (eq. 9, no kept edge): {', '.join(self.dropped)}")
        hist = ", ".join(f"{SHORT[k]} {self.histogram.get(k, 0)}" for k in ("conditioned", "feedback", "debate"))
        lines.append(f"  edge types: {hist}; R_div {self.r_div:.3f}; {len(self.calls)} calls planned")
        return lines


_ARROW = {"conditioned": "→", "feedback": "↺", "debate": "⇄"}


@ev._register
@dataclass(kw_only=True)
class TopoDIMCall(ev.Event):
    """One scheduled call starts (or is skipped because what it needed never came)."""

    type: ClassVar[str] = "topodim_call"
    round: int
    index: int
    total: int
    agent: str
    mode: CallMode
    partner: str = ""
    kind: str = ""
    skipped: bool = False
    reason: str = ""  # why it was skipped

    def describe(self) -> str:
        return describe_call(self.mode, self.agent, self.partner)

    def progress_lines(self) -> list[str]:
        note = f"  (skipped: {self.reason})" if self.skipped else ""
        return [f"  call {self.index}/{self.total}: {self.describe()}{note}"]


def describe_call(mode: CallMode, agent: str, partner: str) -> str:
    """One line for a call, in the case study's words (App. G)."""
    if mode == CallMode.SOLUTION:
        return f"solution — {agent}" + (f" (conditioned on {partner})" if partner else "")
    if mode == CallMode.EVALUATE:
        return f"evaluate — {agent} reviews {partner}"
    if mode == CallMode.REVISE:
        return f"revise — {agent} with {partner}'s review"
    if mode == CallMode.CHALLENGE:
        return f"challenge — {agent} debates {partner}"
    if mode == CallMode.DEFEND:
        return f"defend — {agent} answers {partner}'s challenge"
    return f"final — {agent} decides (conditioned on {partner})"  # CallMode.FINAL
