"""TopoWeaver-R1's plans as data: the orchestrator's YAML, validated, measured and drawn (pure functions).

A plan is a layered DAG: ``steps`` are layers whose agents run in parallel, ``ref`` lists are edges from
agents of earlier steps [TopoWeaver-R1 §2.1.1, App. D]. The validator reports the paper's four tags in the paper's
order (Table 1, eq. 11): no YAML block, YAML that does not parse (PyYAML's ``safe_load``), a document that
is not a plan (the schema), a plan that breaks a topology rule (the logic rules L1–L5 of App. B.3-B.4,
L8). The difficulty's node cap (L6, eq. 13) and conciseness (L7, Definition 1) are warnings, never
failures. The density figures are eqs. 4–7, 13, 14, 19 and 21 of the paper.

Schema details the paper leaves open [our reading: the paper's YAML is only in its Fig. 1(a)]: the field names
``difficulty / notes / steps / step / agents / id / type / ref``; a top-level list of steps or
``step_N`` keys are accepted too; an id reused from an earlier turn is the same agent (its earlier
output reaches it: the inter-turn self edge); ``id@N`` in a ``ref`` reads that agent's output of turn N
(an inter-turn cross-agent edge).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from core.routing.dytopo import KIND_CROSS, KIND_REF, Edge, RoutingResult

# --- vocabulary -------------------------------------------------------------------------------------

TAG_VALID = "VALID"
TAG_NO_YAML = "[NO_YAML_FOUND]"
TAG_PARSE = "[YAML_PARSE_ERROR]"
TAG_SCHEMA = "[YAML_SCHEMA_INVALID]"
TAG_LOGIC = "[YAML_LOGIC_INVALID]"
TAGS = (TAG_NO_YAML, TAG_PARSE, TAG_SCHEMA, TAG_LOGIC)  # the paper's eq. 11, in checking order

# Warnings (the node cap and conciseness do not block a plan: our reading). The names are ours.
WARN_CAP = "[DENSITY_CAP_EXCEEDED]"
WARN_CONCISE = "[NOT_CONCISE]"
WARN_DIFFICULTY = "[NO_DIFFICULTY]"

# Difficulty levels l = 1, 2, 3 and the per-turn node caps N_max(l) (eq. 13).
LEVELS = {"introductory": 1, "interview": 2, "competition": 3}
_LEVEL_ALIASES = {"easy": "introductory", "medium": "interview", "hard": "competition"}
N_MAX = {1: 4, 2: 7, 3: 10}
DEFAULT_DIFFICULTY = "interview"  # when a plan names none [our reading]

# Density weights: lambda1 : lambda2 : lambda3 = 0.5 : 1 : 0.5 [TopoWeaver-R1 E.3.1]; alpha is not given [AMBIGUOUS]
# so the figure is shown with alpha = 1 and labelled so.
LAMBDA_NODE, LAMBDA_EDGE, LAMBDA_DEPTH = 0.5, 1.0, 0.5
ALPHA = 1.0

# Agent types (the orchestrator prompt's vocabulary, [TopoWeaver-R1 B.4]); non-code domains use the pool of
# [TopoWeaver-R1 C.5]. ``algorithmmer`` is the paper's spelling of the algorithm designer.
PLANNER, SEARCHER, ALGORITHMMER, CODER, DEBUGGER, TESTER = (
    "planner", "searcher", "algorithmmer", "coder", "debugger", "tester"
)
THINKER, VERIFIER = "thinker", "verifier"
CODE_TYPES = (PLANNER, SEARCHER, ALGORITHMMER, CODER, DEBUGGER, TESTER)
REASONING_TYPES = (PLANNER, SEARCHER, THINKER, VERIFIER)
_TYPE_ALIASES = {
    "algorithmer": ALGORITHMMER,
    "algorithm_designer": ALGORITHMMER,
    "algorithm designer": ALGORITHMMER,
    "algorithm-designer": ALGORITHMMER,
    "online_searcher": SEARCHER,
    "online searcher": SEARCHER,
}


def agent_types(domain: str) -> tuple[str, ...]:
    return CODE_TYPES if domain == "code" else REASONING_TYPES


def checker_roles(domain: str) -> tuple[str, tuple[str, ...]]:
    """(the type that must close a plan, the types it must read): the tester reading a coder or a
    debugger [TopoWeaver-R1 B.4 note 5]; outside code the verifier reading a thinker [our reading of App. C.5]."""
    return (TESTER, (CODER, DEBUGGER)) if domain == "code" else (VERIFIER, (THINKER,))


# Hard bounds that keep a hostile plan from running away [our reading]: at most 20 agents in a plan (the
# node budget the paper gives every baseline, two turns of 10, [TopoWeaver-R1 B.1]), short names, short ref lists.
MAX_AGENTS = 20
MAX_REFS = 20
MAX_YAML_CHARS = 20_000
ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")
RESERVED_IDS = {"orchestrator"}


# --- plans ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanAgent:
    id: str
    type: str
    ref: tuple[str, ...]  # intra-turn ids, and "id@N" for an earlier turn's output
    step: int  # 1-based

    @property
    def intra_refs(self) -> list[str]:
        return [r for r in self.ref if "@" not in r]

    @property
    def cross_refs(self) -> list[tuple[str, int]]:
        out = []
        for r in self.ref:
            if "@" in r:
                name, _, turn = r.partition("@")
                out.append((name, int(turn)))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "ref": list(self.ref)}


@dataclass(frozen=True)
class Plan:
    difficulty: str
    steps: list[list[PlanAgent]]
    notes: str = ""

    @property
    def level(self) -> int:
        return LEVELS[self.difficulty]

    @property
    def n_max(self) -> int:
        return N_MAX[self.level]

    @property
    def agents(self) -> list[PlanAgent]:
        return [a for step in self.steps for a in step]

    def agent(self, agent_id: str) -> PlanAgent | None:
        return next((a for a in self.agents if a.id == agent_id), None)

    def layers(self) -> list[list[dict[str, Any]]]:
        """The plan as JSON-friendly data (for events and sessions)."""
        return [[a.to_dict() for a in step] for step in self.steps]

    def shape(self) -> str:
        """``[planner_1, searcher_1] → [coder_1] → [tester_1]``."""
        return " → ".join("[" + ", ".join(a.id for a in step) + "]" for step in self.steps)

    @classmethod
    def from_layers(cls, difficulty: str, layers: list[list[dict[str, Any]]], notes: str = "") -> Plan:
        steps = [
            [PlanAgent(str(a["id"]), str(a["type"]), tuple(str(r) for r in a.get("ref", [])), i) for a in layer]
            for i, layer in enumerate(layers, start=1)
        ]
        return cls(difficulty if difficulty in LEVELS else DEFAULT_DIFFICULTY, steps, notes)


@dataclass
class Validation:
    """What the validator found. ``tag`` is TAG_VALID or one of TAGS; ``rule`` names the failed check
    (``L1``..``L8``, or ``schema`` / ``parse`` / ``found``); ``offender`` the agent or ref at fault."""

    tag: str
    yaml_text: str = ""
    plan: Plan | None = None
    rule: str = ""
    message: str = ""
    offender: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.tag == TAG_VALID

    def badge(self) -> str:
        """``VALID`` or ``[YAML_LOGIC_INVALID] L2: ...``."""
        if self.valid:
            return TAG_VALID
        return f"{self.short_badge()}: {self.message}" if self.message else self.tag

    def short_badge(self) -> str:
        """The tag alone, with the logic rule when one failed: ``[YAML_LOGIC_INVALID] L2`` (Table 1's tags)."""
        rule = f" {self.rule}" if self.rule.startswith("L") and not self.valid else ""
        return f"{self.tag}{rule}"


class _Invalid(Exception):
    def __init__(self, tag: str, rule: str, message: str, offender: str = "") -> None:
        super().__init__(message)
        self.tag, self.rule, self.message, self.offender = tag, rule, message, offender


# --- stage 1: find the YAML ---------------------------------------------------------------------------

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
_FENCE = re.compile(
    r"^[ \t]*(?P<ticks>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)[^\n]*\n(?P<body>.*?)(?:^[ \t]*(?P=ticks)[ \t]*$|\Z)",
    re.S | re.M,
)
_KEY_LINE = re.compile(r"^(?:difficulty|steps|step_?\d+|-\s*step)\s*:", re.M | re.I)


def extract_yaml(reply: str) -> str | None:
    """The plan's YAML text in an orchestrator reply, or None [TopoWeaver-R1 Table 1 "No YAML block found"].

    A ```yaml (or ```yml) block wins; else the first fenced block that holds plan keys; else, for a
    reply that is bare YAML as the prompt asks, the text from the first plan key on."""
    text = _THINK.sub("", reply or "")
    fences = [(m["lang"].lower(), m["body"]) for m in _FENCE.finditer(text)]
    for lang, body in fences:
        if lang in ("yaml", "yml") and body.strip():
            return body.strip("\n")
    for _, body in fences:
        if _KEY_LINE.search(body):
            return body.strip("\n")
    if fences:
        return None
    match = _KEY_LINE.search(text)
    return text[match.start():].strip("\n") if match else None


# --- stages 2-4: parse, schema, logic ------------------------------------------------------------------


def validate_plan(
    reply: str, *, domain: str = "code", turn: int = 1, earlier: dict[int, list[str]] | None = None
) -> Validation:
    """Check an orchestrator reply in the paper's order; the first failing stage gives the tag.

    ``earlier``: turn -> ids of the agents that ran in that turn (what ``id@N`` refs may name)."""
    yaml_text = extract_yaml(reply)
    if yaml_text is None:
        return Validation(TAG_NO_YAML, rule="found", message="no YAML block found in the reply")
    return validate_yaml(yaml_text, domain=domain, turn=turn, earlier=earlier)


def validate_yaml(
    yaml_text: str, *, domain: str = "code", turn: int = 1, earlier: dict[int, list[str]] | None = None
) -> Validation:
    """Stages 2-4 on a YAML text taken whole, every line of it (a plan the user edited: nothing is skipped
    the way a model's reply is searched for its plan)."""
    if not yaml_text.strip():
        return Validation(TAG_NO_YAML, rule="found", message="the plan is empty")
    if len(yaml_text) > MAX_YAML_CHARS:
        return Validation(TAG_PARSE, yaml_text[:MAX_YAML_CHARS], rule="parse",
                          message=f"the YAML is longer than {MAX_YAML_CHARS} characters")
    import yaml  # here: only a TopoWeaver-R1 run needs PyYAML, and importing it slowed every start-up

    try:
        data = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        return Validation(TAG_PARSE, yaml_text, rule="parse", message=_yaml_error(exc))
    except (RecursionError, ValueError, TypeError) as exc:  # pathological documents
        return Validation(TAG_PARSE, yaml_text, rule="parse", message=f"YAML parse failed: {type(exc).__name__}")
    warnings: list[str] = []
    try:
        plan = _schema(data, domain, warnings)
        _logic(plan, domain, turn, earlier or {})
    except _Invalid as bad:
        return Validation(bad.tag, yaml_text, rule=bad.rule, message=bad.message, offender=bad.offender,
                          warnings=warnings)
    warnings += plan_warnings(plan)
    return Validation(TAG_VALID, yaml_text, plan=plan, warnings=warnings)


def _yaml_error(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    # Where the broken construct began (an unclosed "[" two lines up), which is the line to fix.
    began = f" ({context} from line {start.line + 1})" if context and start is not None else ""
    return f"YAML parse failed{where}: {problem}{began}"


def _schema_error(message: str, offender: str = "") -> _Invalid:
    return _Invalid(TAG_SCHEMA, "schema", message, offender)


def _lower_keys(data: dict[Any, Any]) -> dict[str, Any]:
    return {str(k).strip().lower(): v for k, v in data.items()}


_STEP_KEY = re.compile(r"^step[_ ]?(\d+)$")


def _raw_steps(data: Any) -> tuple[list[Any], Any, Any]:
    """(the steps, the difficulty value or None, the notes value or None) of any accepted layout."""
    if isinstance(data, list):
        return data, None, None
    if not isinstance(data, dict):
        raise _schema_error(f"the YAML is {_kind(data)}, not a plan with steps")
    top = _lower_keys(data)
    difficulty, notes = top.get("difficulty"), top.get("notes")
    steps = top.get("steps", top.get("plan"))
    if steps is None:
        numbered = {int(m[1]): v for k, v in top.items() if (m := _STEP_KEY.match(k))}
        if not numbered:
            raise _schema_error("the plan has no steps")
        steps = [numbered[n] for n in sorted(numbered)]
    elif isinstance(steps, dict):
        inner = _lower_keys(steps)
        numbered = {int(m[1]): v for k, v in inner.items() if (m := _STEP_KEY.match(k))}
        if not numbered or len(numbered) != len(inner):
            raise _schema_error("steps must be a list (or step_1, step_2, ... keys)")
        steps = [numbered[n] for n in sorted(numbered)]
    if not isinstance(steps, list):
        raise _schema_error(f"steps must be a list, got {_kind(steps)}")
    return steps, difficulty, notes


def _step_agents(step: Any, number: int) -> list[Any]:
    if isinstance(step, list):
        return step
    if isinstance(step, dict):
        keys = _lower_keys(step)
        if "agents" in keys:
            agents = keys["agents"]
            if not isinstance(agents, list):
                raise _schema_error(f"step {number}: agents must be a list, got {_kind(agents)}")
            return agents
        if "id" in keys:  # a step of one agent written without the list
            return [step]
    raise _schema_error(f"step {number} must be a list of agents (or have an agents list), got {_kind(step)}")


def _schema(data: Any, domain: str, warnings: list[str]) -> Plan:
    """Stage 3: the document has the shape of a plan [TopoWeaver-R1 §2.3, B.3; fields ours]."""
    raw_steps, difficulty, notes = _raw_steps(data)
    if not raw_steps:
        raise _schema_error("the plan has no steps")
    if difficulty is None:
        warnings.append(f"{WARN_DIFFICULTY} no difficulty given: {DEFAULT_DIFFICULTY} assumed (N_max 7)")
        level_name = DEFAULT_DIFFICULTY
    else:
        name = str(difficulty).strip().lower()
        level_name = _LEVEL_ALIASES.get(name, name)
        if level_name not in LEVELS:
            raise _schema_error(f"difficulty {str(difficulty)[:40]!r} is not introductory, interview or competition")
    if notes is not None and not isinstance(notes, str | int | float):
        raise _schema_error(f"notes must be text, got {_kind(notes)}")
    allowed = agent_types(domain)
    steps: list[list[PlanAgent]] = []
    count = 0
    for number, raw_step in enumerate(raw_steps, start=1):
        agents = _step_agents(raw_step, number)
        if not agents:
            raise _schema_error(f"step {number} has no agents")
        step: list[PlanAgent] = []
        for position, raw in enumerate(agents, start=1):
            count += 1
            if count > MAX_AGENTS:
                raise _schema_error(f"the plan has more than {MAX_AGENTS} agents")
            step.append(_agent(raw, number, position, allowed))
        steps.append(step)
    return Plan(level_name, steps, str(notes).strip() if notes is not None else "")


def _agent(raw: Any, step: int, position: int, allowed: tuple[str, ...]) -> PlanAgent:
    where = f"step {step}, agent {position}"
    if not isinstance(raw, dict):
        raise _schema_error(f"{where} must be a mapping with id, type and ref, got {_kind(raw)}")
    fields_ = _lower_keys(raw)
    agent_id = fields_.get("id")
    if not isinstance(agent_id, str) or not agent_id.strip():
        raise _schema_error(f"{where}: id must be text, got {_kind(agent_id)}")
    agent_id = agent_id.strip()
    if not ID_RE.match(agent_id):
        raise _schema_error(f"{where}: id {agent_id[:40]!r} must be a letter then letters, digits or _ "
                            "(at most 40)", agent_id[:40])
    if agent_id.lower() in RESERVED_IDS:
        raise _schema_error(f"{where}: id {agent_id!r} is reserved", agent_id)
    kind = fields_.get("type")
    if not isinstance(kind, str):
        raise _schema_error(f"{agent_id}: type must be text, got {_kind(kind)}", agent_id)
    kind = kind.strip().lower()
    kind = _TYPE_ALIASES.get(kind, kind)
    if kind not in allowed:
        raise _schema_error(f"{agent_id}: type {kind[:40]!r} is not one of {', '.join(allowed)}", agent_id)
    refs = fields_.get("ref", fields_.get("refs"))
    if refs is None:
        refs = []
    elif isinstance(refs, str):
        refs = [refs]  # a single id written without the list
    if not isinstance(refs, list) or len(refs) > MAX_REFS:
        raise _schema_error(f"{agent_id}: ref must be a list of ids (at most {MAX_REFS})", agent_id)
    clean: list[str] = []
    for ref in refs:
        if not isinstance(ref, str) or not _ref_ok(ref.strip()):
            raise _schema_error(f"{agent_id}: ref {str(ref)[:40]!r} is not an agent id (or id@turn)", agent_id)
        if ref.strip() not in clean:  # an edge is an edge: a repeated ref counts once
            clean.append(ref.strip())
    return PlanAgent(agent_id, kind, tuple(clean), step)


def _ref_ok(ref: str) -> bool:
    name, at, turn = ref.partition("@")
    return bool(ID_RE.match(name)) and (not at or (turn.isdigit() and 0 < int(turn) < 100))


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


def _logic(plan: Plan, domain: str, turn: int, earlier: dict[int, list[str]]) -> None:
    """Stage 4: the topology rules (App. B.3-B.4). Every violation is listed; the first names the rule."""
    problems: list[tuple[str, str, str]] = []  # (rule, message, offender)
    step_of: dict[str, int] = {}
    types: dict[str, str] = {}
    for agent in plan.agents:  # L8: unique ids
        if agent.id in step_of:
            problems.append(("L8", f"id {agent.id} is used twice", agent.id))
        else:
            step_of[agent.id], types[agent.id] = agent.step, agent.type
    for agent in plan.agents:
        for ref in agent.intra_refs:
            if ref == agent.id:  # L8: no self-reference
                problems.append(("L8", f"{agent.id} refs itself", agent.id))
            elif agent.step == 1:  # L1: the first step has empty refs
                problems.append(("L1", f"{agent.id} is in the first step but refs {ref}", agent.id))
            elif ref not in step_of:  # L2: refs name agents of earlier steps
                problems.append(("L2", f"{agent.id} refs {ref}, which is not in the plan", f"{agent.id}→{ref}"))
            elif step_of[ref] >= agent.step:
                where = "the same step" if step_of[ref] == agent.step else f"a later step ({step_of[ref]})"
                problems.append(("L2", f"{agent.id} (step {agent.step}) refs {ref} in {where}", f"{agent.id}→{ref}"))
        for name, ref_turn in agent.cross_refs:
            if agent.step == 1:
                problems.append(("L1", f"{agent.id} is in the first step but refs {name}@{ref_turn}", agent.id))
            elif ref_turn >= turn:
                problems.append(("L2", f"{agent.id} refs {name}@{ref_turn}, but only earlier turns can be read",
                                 f"{agent.id}→{name}@{ref_turn}"))
            elif name not in earlier.get(ref_turn, []):
                problems.append(("L2", f"{agent.id} refs {name}@{ref_turn}, but no agent {name} ran in turn "
                                 f"{ref_turn}", f"{agent.id}→{name}@{ref_turn}"))
    closer, readable = checker_roles(domain)
    last = plan.steps[-1]
    closers = [a for a in last if a.type == closer]
    if not closers:  # L3
        problems.append(("L3", f"the last step (step {len(plan.steps)}) has no {closer}",
                         ", ".join(a.id for a in last)))
    elif not any(types.get(r) in readable and step_of.get(r, 0) < a.step for a in closers for r in a.intra_refs):
        wanted = " or ".join(readable)  # L4
        problems.append(("L4", f"the {closer} in the last step refs no {wanted}", closers[0].id))
    if domain == "code":  # L5: a debugger only after a coder
        first_coder = min((a.step for a in plan.agents if a.type == CODER), default=None)
        for agent in plan.agents:
            if agent.type == DEBUGGER and (first_coder is None or first_coder >= agent.step):
                problems.append(("L5", f"debugger {agent.id} (step {agent.step}) comes before any coder", agent.id))
    if problems:
        rule, message, offender = problems[0]
        more = f" (and {len(problems) - 1} more: " + "; ".join(p[1] for p in problems[1:3]) + ")" if (
            len(problems) > 1) else ""
        raise _Invalid(TAG_LOGIC, rule, message + more, offender)


def plan_warnings(plan: Plan) -> list[str]:
    """L6 (the node cap of eq. 13) and L7 (Definition 1's conciseness): reported, never blocking."""
    out = []
    size = len(plan.agents)
    if size > plan.n_max:
        out.append(f"{WARN_CAP} L6: |V| = {size} > N_max({plan.difficulty}) = {plan.n_max}")
    read = {r for a in plan.agents for r in a.intra_refs}
    idle = [a.id for step in plan.steps[:-1] for a in step if a.id not in read]
    if idle:
        out.append(f"{WARN_CONCISE} L7: {', '.join(idle)} feed(s) no later agent")
    return out


# --- density (for display; the paper uses it as a training reward) -------------------------------------


@dataclass(frozen=True)
class Density:
    nodes: int  # |V|, eq. 4
    edges: int  # |E|, eq. 5
    steps: int  # s, the depth measure (Theorem 1)
    n_max: int  # N_max(l), eq. 13
    s_node: float  # eq. 6
    s_edge: float  # eq. 6
    s_depth: float  # eq. 6
    s_complex: float  # eq. 7, alpha = 1
    r_g: float  # eq. 14
    within_cap: bool
    cost: float  # eq. 19, per agent, in units of m
    raw: float  # eq. 21
    alpha: float = ALPHA

    def to_dict(self) -> dict[str, Any]:
        return {
            "V": self.nodes, "E": self.edges, "s": self.steps, "n_max": self.n_max,
            "S_node": round(self.s_node, 4), "S_edge": round(self.s_edge, 4), "S_depth": round(self.s_depth, 4),
            "S_complex": round(self.s_complex, 4), "alpha": self.alpha, "r_g": round(self.r_g, 4),
            "within_cap": self.within_cap, "cost": round(self.cost, 4), "S": round(self.raw, 4),
        }


def node_count(plan: Plan) -> int:
    """|V| = sum over steps of n_i, the agent invocations of step i (eq. 4)."""
    return sum(len(step) for step in plan.steps)


def edge_count(plan: Plan) -> int:
    """|E| = sum over steps and agents of |Agent_j[ref]| (eq. 5); an inter-turn self edge is not a ref."""
    return sum(len(a.ref) for step in plan.steps for a in step)


def normalised_scores(nodes: int, edges: int, steps: int, n_max: int) -> tuple[float, float, float]:
    """(S_node, S_edge, S_depth) of eq. 6: exp(-|V|/N_max(l)), exp(-|E| / (|V|(|V|-0.5))), 1 - s/|V|."""
    s_node = math.exp(-nodes / n_max)
    s_edge = math.exp(-edges / (nodes * (nodes - 0.5)))
    s_depth = 1.0 - steps / nodes
    return s_node, s_edge, s_depth


def complexity(s_node: float, s_edge: float, s_depth: float, alpha: float = ALPHA) -> float:
    """S_complex = alpha * exp(l1 S_node + l2 S_edge + l3 S_depth) (eq. 7); larger means sparser."""
    return alpha * math.exp(LAMBDA_NODE * s_node + LAMBDA_EDGE * s_edge + LAMBDA_DEPTH * s_depth)


def density_reward(s_complex: float, nodes: int, n_max: int) -> float:
    """r_g (eq. 14): S_complex within the cap, tanh((N_max - |V|) / N_max) beyond it."""
    return s_complex if nodes <= n_max else math.tanh((n_max - nodes) / n_max)


def agent_cost(nodes: int, edges: int) -> float:
    """The average per-agent token cost C / m = 1 + |V| + 2|E|/|V| (eq. 19)."""
    return 1.0 + nodes + 2.0 * edges / nodes


def raw_density(nodes: int, edges: int, steps: int) -> float:
    """S = |V| + 2|E|/|V| + s (eq. 21), the density before normalisation."""
    return nodes + 2.0 * edges / nodes + steps


def density(plan: Plan) -> Density:
    nodes, edges, steps = node_count(plan), edge_count(plan), len(plan.steps)
    s_node, s_edge, s_depth = normalised_scores(nodes, edges, steps, plan.n_max)
    s_complex = complexity(s_node, s_edge, s_depth)
    return Density(
        nodes, edges, steps, plan.n_max, s_node, s_edge, s_depth, s_complex,
        density_reward(s_complex, nodes, plan.n_max), nodes <= plan.n_max,
        agent_cost(nodes, edges), raw_density(nodes, edges, steps),
    )


# --- execution outcomes ------------------------------------------------------------------------------

COMPILE_ERROR = "COMPILE_ERROR"
# The paper's code-error rewards and YAML penalties (Table 1, §2.3): shown as r_e, informational only.
EXECUTION_REWARD = {
    "PASSED": 1.5, "WRONG_ANSWER": 1.0, "TIME_LIMIT_EXCEEDED": 0.9, "MEMORY_LIMIT_EXCEEDED": 0.8,
    "RUNTIME_ERROR": 0.7, COMPILE_ERROR: 0.6,
    TAG_NO_YAML: -2.0, TAG_PARSE: -1.5, TAG_SCHEMA: -1.0, TAG_LOGIC: -0.5,
}


def paper_status(outcome: str) -> str:
    """The sandbox's outcome in the paper's words: its SYNTAX_ERROR is the paper's COMPILE_ERROR."""
    return COMPILE_ERROR if outcome == "SYNTAX_ERROR" else outcome


# --- the graph a plan draws ---------------------------------------------------------------------------


def ghost(agent_id: str, turn: int) -> str:
    """The node that stands for an agent's output of an earlier turn."""
    return f"{agent_id}@{turn}"


def plan_routing(plan: Plan, memory_turns: dict[str, int] | None = None) -> RoutingResult:
    """The plan as the one graph shape every consumer reads (core.routing.dytopo.RoutingResult).

    Layers are the tiers; ``ref`` edges are KIND_REF; an earlier turn's output (an ``id@N`` ref, or the
    inter-turn self edge added when an id recurs, [TopoWeaver-R1 App. D]) is a KIND_CROSS edge from an inactive
    node ``id@N``. ``memory_turns``: agent id -> the latest earlier turn it ran in. The "similarity" is
    the adjacency (1 where an edge reads the column's agent): a plan has no scores."""
    memory_turns = memory_turns or {}
    edges: list[Edge] = []
    ghosts: list[str] = []
    for agent in plan.agents:
        for ref in agent.intra_refs:
            edges.append(Edge(ref, agent.id, 1.0, KIND_REF))
        for name, turn in agent.cross_refs:
            node = ghost(name, turn)
            ghosts.append(node)
            edges.append(Edge(node, agent.id, 1.0, KIND_CROSS))
        if agent.id in memory_turns:
            node = ghost(agent.id, memory_turns[agent.id])
            ghosts.append(node)
            if all((e.src, e.dst) != (node, agent.id) for e in edges):
                edges.append(Edge(node, agent.id, 1.0, KIND_CROSS))
    ghosts = sorted(set(ghosts), key=lambda n: (int(n.rpartition("@")[2]), n))
    order = [a.id for a in plan.agents]
    names = [*ghosts, *order]
    index = {name: i for i, name in enumerate(names)}
    similarity = [[0.0] * len(names) for _ in names]
    for e in edges:
        similarity[index[e.dst]][index[e.src]] = 1.0
    in_degree = max((sum(1 for e in edges if e.dst == n) for n in order), default=0)
    return RoutingResult(
        names=names,
        tau=0.0,
        k_in=max(1, in_degree),
        similarity=similarity,
        edges=sorted(edges, key=lambda e: (e.dst, -e.score, e.src)),
        order=order,
        tiers=[[a.id for a in step] for step in plan.steps],
        paper_order=list(order),
        acyclic=True,
        inactive=ghosts,
    )


# --- the deterministic fallback [ours: the paper has none] --------------------------------------------------

# (id, type, refs) per agent, one list per step
_Layers = list[list[tuple[str, str, list[str]]]]
_FALLBACK_CODE: dict[str, _Layers] = {
    "introductory": [[("planner_1", PLANNER, [])], [("coder_1", CODER, ["planner_1"])],
                     [("tester_1", TESTER, ["coder_1"])]],
    "interview": [[("planner_1", PLANNER, []), ("searcher_1", SEARCHER, [])],
                  [("algorithmmer_1", ALGORITHMMER, ["planner_1", "searcher_1"])],
                  [("coder_1", CODER, ["algorithmmer_1"])], [("tester_1", TESTER, ["coder_1"])]],
    "competition": [[("planner_1", PLANNER, []), ("searcher_1", SEARCHER, []), ("algorithmmer_1", ALGORITHMMER, [])],
                    [("coder_1", CODER, ["planner_1", "searcher_1", "algorithmmer_1"]),
                     ("coder_2", CODER, ["planner_1", "searcher_1", "algorithmmer_1"])],
                    [("debugger_1", DEBUGGER, ["coder_1", "coder_2"])], [("tester_1", TESTER, ["debugger_1"])]],
}
_FALLBACK_CODE_RETRY: _Layers = [[("coder_1", CODER, [])], [("debugger_1", DEBUGGER, ["coder_1"])],
                        [("tester_1", TESTER, ["debugger_1"])]]
_FALLBACK_REASONING: dict[str, _Layers] = {
    "introductory": [[("thinker_1", THINKER, [])], [("verifier_1", VERIFIER, ["thinker_1"])]],
    "interview": [[("planner_1", PLANNER, [])], [("thinker_1", THINKER, ["planner_1"])],
                  [("verifier_1", VERIFIER, ["thinker_1"])]],
    "competition": [[("planner_1", PLANNER, []), ("searcher_1", SEARCHER, [])],
                    [("thinker_1", THINKER, ["planner_1", "searcher_1"]),
                     ("thinker_2", THINKER, ["planner_1", "searcher_1"])],
                    [("verifier_1", VERIFIER, ["thinker_1", "thinker_2"])]],
}
_FALLBACK_REASONING_RETRY: _Layers = [[("thinker_1", THINKER, [])], [("verifier_1", VERIFIER, ["thinker_1"])]]


FALLBACK_NOTES = "fallback plan"  # a fallback plan's note (its agents' view shows it)


def fallback_plan(domain: str, difficulty: str = DEFAULT_DIFFICULTY, *, retry: bool = False) -> Plan:
    """A difficulty template for when the orchestrator's plan is unusable (an option; the paper's
    invalid plan just uses up its turn). ``retry``: after a failed turn, the agent that wrote the code
    reruns (its id recurs, so its earlier output and the error reach it), a debugger then a tester."""
    difficulty = difficulty if difficulty in LEVELS else DEFAULT_DIFFICULTY
    if domain == "code":
        layers = _FALLBACK_CODE_RETRY if retry else _FALLBACK_CODE[difficulty]
    else:
        layers = _FALLBACK_REASONING_RETRY if retry else _FALLBACK_REASONING[difficulty]
    steps = [[PlanAgent(i, t, tuple(r), n) for i, t, r in layer] for n, layer in enumerate(layers, start=1)]
    return Plan(difficulty, steps, FALLBACK_NOTES)


def plan_yaml(plan: Plan) -> str:
    """A plan written back as YAML (our schema), e.g. to show a fallback plan."""
    data = {
        "difficulty": plan.difficulty,
        **({"notes": plan.notes} if plan.notes else {}),
        "steps": [{"step": n, "agents": [a.to_dict() for a in step]} for n, step in enumerate(plan.steps, start=1)],
    }
    import yaml

    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100).strip()
