"""TopoWeaver-R1's own events: the plan of each turn and how the turn ended.

Everything else a TopoWeaver run shows travels in the shared events: every agent call
(AgentStarted/AgentDelta/AgentFinished), the plan's layered DAG (TopologyBuilt with KIND_REF and
KIND_CROSS edges), the tester's sandbox runs (TestRun). Both classes register with the one event stream,
so sessions, replay and ``--json`` carry them; ``progress_lines`` is what the headless printer shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from core.runtime.events import Event, _register


def _num(value: Any, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) and not isinstance(value, bool) else "?"


@_register
@dataclass(kw_only=True)
class PlanProposed(Event):
    """The orchestrator's reply for a turn, validated [TopoWeaver-R1 Table 1], with the plan's density [eqs. 4–7]."""

    type: ClassVar[str] = "topoweaver_plan"
    round: int  # the turn
    raw: str  # the orchestrator's whole reply
    yaml: str  # the YAML found in it ("" when none)
    tag: str  # VALID or one of [NO_YAML_FOUND] [YAML_PARSE_ERROR] [YAML_SCHEMA_INVALID] [YAML_LOGIC_INVALID]
    rule: str = ""  # which check failed: found, parse, schema, L1..L8
    message: str = ""  # what failed, naming the offending agent or ref
    offender: str = ""
    difficulty: str = ""  # introductory | interview | competition
    n_max: int = 0  # N_max(l), eq. 13
    steps: list[list[dict[str, Any]]] = field(default_factory=list)  # the plan that runs: [[{id, type, ref}]]
    notes: str = ""  # the orchestrator's note to the team about the last turn
    density: dict[str, Any] = field(default_factory=dict)  # V, E, s, S_node, S_edge, S_depth, S_complex, ...
    warnings: list[str] = field(default_factory=list)  # the cap (L6) and conciseness (L7)
    fallback: bool = False  # the plan that runs is the fallback template, not the orchestrator's
    turns: int = 0  # K, the most turns the run may take
    # The plan a person wrote in place of the Orchestrator's (steering): it runs, but is not the Orchestrator's,
    # so the valid-plan rate leaves it out. Left out of the dict when False (older sessions round-trip).
    by_user: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        if not self.by_user:
            del data["by_user"]
        return data

    @property
    def valid(self) -> bool:
        return self.tag == "VALID"

    @property
    def runs(self) -> bool:
        """A plan runs this turn: the orchestrator's valid one, or the fallback."""
        return bool(self.steps)

    def badge(self) -> str:
        if self.valid:
            return "VALID"
        rule = f" {self.rule}" if self.rule.startswith("L") else ""
        return f"{self.tag}{rule}: {self.message}" if self.message else self.tag

    def shape(self) -> str:
        return " → ".join("[" + ", ".join(str(a.get("id", "?")) for a in step) + "]" for step in self.steps)

    def agent_count(self) -> int:
        return sum(len(step) for step in self.steps)

    def density_line(self) -> str:
        d = self.density
        if not d:
            return ""
        cap = "within" if d.get("within_cap") else "OVER"
        return (
            f"|V| {d.get('V')} · |E| {d.get('E')} · s {d.get('s')} · S_node {_num(d.get('S_node'))} "
            f"S_edge {_num(d.get('S_edge'))} S_depth {_num(d.get('S_depth'))} · "
            f"S_complex(α={_num(d.get('alpha'), 0)}) {_num(d.get('S_complex'))} · r_g {_num(d.get('r_g'))} · "
            f"{cap} N_max {d.get('n_max')} · cost/agent {_num(d.get('cost'), 1)}m"
        )

    def progress_lines(self) -> list[str]:
        level = f"{self.difficulty} (N_max {self.n_max})" if self.difficulty else "difficulty ?"
        lines = [f"plan: {self.badge()}"]
        if not self.valid:
            lines.append("  the invalid plan uses up this turn" if not self.fallback else
                         "  the fallback plan runs instead")
        if self.runs:
            lines.append(f"  {level}: {self.agent_count()} agents in {len(self.steps)} steps: {self.shape()}")
            lines.append(f"  density: {self.density_line()}")
        lines += [f"  warning: {w}" for w in self.warnings]
        if self.notes:
            lines.append(f"  orchestrator's note: {self.notes}")
        return lines


@_register
@dataclass(kw_only=True)
class TurnEnded(Event):
    """A turn's verdict: the tester's sandbox status (code) or the verifier's answer check, or the
    plan's tag when no plan ran. ``history`` is the run's turn history so far, one line."""

    type: ClassVar[str] = "topoweaver_turn"
    round: int
    status: str  # PASSED, WRONG_ANSWER, ..., COMPILE_ERROR, NO_CODE, NO_TESTS; CORRECT/INCORRECT; or a tag
    passed: bool
    agents: int = 0
    steps: int = 0
    failing_test: str = ""
    log: str = ""  # the trimmed traceback or check detail, as the next turn sees it
    source_agent: str = ""  # whose code (or answer) was checked
    reward: float | None = None  # r_e from the paper's Table 1 (informational)
    history: str = ""

    def progress_lines(self) -> list[str]:
        who = f" ({self.source_agent})" if self.source_agent else ""
        lines = [f"turn {self.round}: {self.status}{who}" + (f" — {self.failing_test}" if self.failing_test else "")]
        if self.history:
            lines.append(f"history: {self.history}")
        return lines
