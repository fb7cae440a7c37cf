"""What the MCP tools return: Pydantic models (so the server publishes their JSON schemas and clients
get structured content) and the functions that fill them from a swarm task.

The per-round topology is read from the event stream, generically: a round's goal and decision come
from ManagerDecided, its graphs from every event that is not one of the run-flow kinds (TopologyBuilt
today; other methods' typed graphs, agent selections or plans tomorrow) with the bulky fields
(similarity matrices, embeddings) left out.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from core.demo.played import demo_answer_note
from core.llm.prices import cost_text
from core.mcp.tasks import SwarmTask, TaskStatus
from core.runtime import events as ev
from core.runtime.dispatch import EventTable
from core.runtime.steering import SteerAction

Status = TaskStatus

# Event kinds that describe the run's flow, not a graph or a routing decision.
FLOW_EVENTS = frozenset(
    {
        ev.RunStarted.type, ev.RoundStarted.type, ev.PhaseStarted.type, ev.AgentStarted.type,
        ev.AgentDelta.type, ev.AgentFinished.type, ev.DescriptorsReady.type, ev.MessagesRouted.type,
        ev.MemoryTrimmed.type, ev.RoundFinished.type, ev.RunFinished.type, ev.ParamsChanged.type,
        ev.ControlChanged.type, ev.Notice.type, ev.TestRun.type, ev.ManagerDecided.type, ev.UserSteered.type,
    }
)
BULKY_FIELDS = frozenset({"similarity", "query_embeddings", "key_embeddings", "embeddings", "names", "ts", "type",
                          "round"})
SCORE_DIGITS = 4


class StartResult(BaseModel):
    task_id: str = Field(description="pass it to swarm_status, swarm_result and swarm_cancel")
    status: Status
    strategy: str
    domain: str
    team_name: str = Field(description="the team that runs: a built-in one (code, math, general) or one of the "
                           "server's [team.NAME] tables")
    team: list[str] = Field(description="the Manager and the workers")
    params: dict[str, Any] = Field(description="tau, k_in and max_rounds the run uses")
    options: dict[str, Any]
    notes: list[str] = Field(description="parameters the strategy does not use, or adjusted by its definition")
    budget_s: float = Field(description="wall-clock budget; past it the run is stopped and reported as failed")
    poll_interval_s: float = Field(description="a good wait before the first swarm_status")
    sessions_dir: str = Field(description="where the run's session and live event log are saved")
    attach: str = Field(description="the command that watches this run live in the terminal app")
    message: str


class StatusResult(BaseModel):
    task_id: str
    status: Status
    round: int = Field(description="the round under way (or the last one, once finished)")
    max_rounds: int
    phase: str
    active_agents: list[str] = Field(description="agents whose model call is under way")
    elapsed_s: float
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    poll_interval_s: float | None = Field(description="when to ask again; null once the run has ended")
    termination_reason: str | None = None
    error: str | None = None
    session_file: str | None = None
    message: str
    steering: list[dict[str, Any]] = Field(
        default_factory=list,
        description="every steering action applied so far (swarm_steer): round, phase, action, target, accepted, "
        "reason (why refused)",
    )


class SteerResult(BaseModel):
    task_id: str
    status: Status
    action: str = Field(description="what was asked, in one line")
    message: str


class RoundTopology(BaseModel):
    round: int
    goal: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    broadcast: bool = Field(False, description="every worker heard every other (round 1 of DyTopo)")
    graphs: list[dict[str, Any]] = Field(
        default_factory=list,
        description="each graph event of the round, e.g. kind topology_built: edges [{src, dst, score}], "
        "removed edges and why, order, tiers, tau, k_in, strategy",
    )
    decision: dict[str, Any] | None = Field(None, description="the Manager's end-of-round decision")


class RunResult(BaseModel):
    task_id: str
    status: Status
    final_answer: str | None = None
    answer_source: str | None = None
    termination_reason: str | None = Field(
        None, description="manager, max_rounds, converged, budget (time_budget, max_calls or max_cost), cancelled, "
        "error")
    detail: str = ""
    rounds: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    wall_s: float
    cost: str | None = Field(None, description="what the run's calls cost: \"cost $0.0042\", or \"cost: unknown for "
                             "model X\" (local servers are free)")
    error: str | None = None
    session_file: str | None = None
    topology: list[RoundTopology] | None = None
    summary: list[dict[str, Any]] | None = Field(
        None, description="a comparison (swarm_compare): one row per method — method, answer, verdict, calls, "
        "prompt_tokens, completion_tokens, wall_s, session, state, reason, rounds, tokens_estimated (how many of "
        "its tokens are estimates: calls cut off by time_budget or a cancel, a server that reports no usage)")
    demo_played: str | None = Field(
        None, description="a demo asked for another problem plays its own: this names it, and the answer is "
        "about that problem, not the one asked")
    message: str


class CancelResult(BaseModel):
    task_id: str
    status: Status
    cancelled: bool = Field(description="true when a running swarm was asked to stop")
    message: str


# --- filling them ----------------------------------------------------------------------------


def _session_file(entry: SwarmTask) -> str | None:
    path = entry.session_path or (entry.recorder.path if entry.recorder is not None else None)
    return str(path.resolve()) if path is not None else None


def _round_text(entry: SwarmTask) -> str:
    return f"round {entry.round}/{entry.max_rounds}" if entry.round else "not in round 1 yet"


def start_result(entry: SwarmTask, sessions_dir: str) -> StartResult:
    interval = entry.poll_interval() or 5.0
    which = entry.domain if entry.team in ("", entry.domain) else f"team {entry.team}, {entry.domain}"
    return StartResult(
        task_id=entry.id, status=entry.status,
        strategy=entry.strategy, domain=entry.domain, team_name=entry.team or entry.domain,
        team=list(entry.agents), params=dict(entry.params),
        options=dict(entry.options), notes=list(entry.notes), budget_s=entry.budget_s,
        poll_interval_s=interval, sessions_dir=sessions_dir, attach=f"swarm-tui attach {entry.id}",
        message=(
            f"swarm {entry.id} started ({entry.strategy}, {which}, up to {entry.max_rounds} rounds). "
            f"Poll swarm_status every {interval:g} s or so, then call swarm_result. Watch it live with "
            f"`swarm-tui attach {entry.id}`."
        ),
    )


def status_result(entry: SwarmTask) -> StatusResult:
    finished = entry.finished
    interval = entry.poll_interval()
    if entry.running:
        doing = f", phase {entry.phase}" if entry.phase else ""
        message = f"running: {_round_text(entry)}{doing}; ask again in about {interval:g} s"
    elif entry.status == TaskStatus.COMPLETED:
        message = f"completed after {entry.round} round(s) ({finished.reason if finished else 'done'}): " \
                  "call swarm_result for the answer"
    elif entry.status == TaskStatus.CANCELLED:
        message = "cancelled; swarm_result has what the run had produced"
    else:
        message = f"failed: {entry.error}"
    return StatusResult(
        task_id=entry.id, status=entry.status,
        round=entry.round, max_rounds=entry.max_rounds, phase=entry.phase,
        active_agents=sorted(entry.active), elapsed_s=round(entry.elapsed(), 2), llm_calls=entry.llm_calls,
        prompt_tokens=entry.prompt_tokens, completion_tokens=entry.completion_tokens, tokens=entry.tokens,
        poll_interval_s=interval, termination_reason=finished.reason if finished else None, error=entry.error,
        session_file=_session_file(entry), message=message,
        steering=[{"round": e.round, "phase": str(e.phase), "action": e.action, "target": e.target,
                   "accepted": e.accepted, "reason": e.reason} for e in entry.steering],
    )


def steer_result(entry: SwarmTask, action: SteerAction) -> SteerResult:
    when = f"at the barrier before round {action.at_round}" if action.at_round else "at the run's next barrier"
    return SteerResult(
        task_id=entry.id, status=entry.status, action=action.describe(),
        message=f"queued: it applies {when}; swarm_status lists it as taken or refused (with why) once applied",
    )


def result_result(entry: SwarmTask, include_topology: bool = False) -> RunResult:
    finished = entry.finished
    base: dict[str, Any] = {
        "task_id": entry.id, "status": entry.status, "rounds": entry.round,
        "prompt_tokens": entry.prompt_tokens, "completion_tokens": entry.completion_tokens,
        "tokens": entry.tokens, "wall_s": round(entry.elapsed(), 2), "error": entry.error,
        "session_file": _session_file(entry),
    }
    if include_topology:
        base["topology"] = topology(entry.events)
    if entry.status == TaskStatus.RUNNING:
        return RunResult(
            **base,
            message=f"still running ({_round_text(entry)}, phase {entry.phase}): no result yet; poll swarm_status "
            f"and call swarm_result when it says completed (in about {entry.poll_interval():g} s)",
        )
    if entry.compare_rows is not None:
        return _compare_result(entry, base)
    if finished is not None:
        base.update(final_answer=finished.final_answer, answer_source=finished.answer_source or None,
                    termination_reason=finished.reason, detail=finished.detail, rounds=finished.rounds,
                    cost=cost_text(finished.cost_usd, finished.cost_unknown, finished.cost_local))
    if entry.status == TaskStatus.COMPLETED:
        message = f"completed: {finished.reason if finished else 'done'} after {entry.round} round(s)"
        if finished is not None and finished.demo_played:
            base["demo_played"] = finished.demo_played
            message += f"; {demo_answer_note(finished.demo_played)}"
    elif entry.status == TaskStatus.CANCELLED:
        message = "cancelled: the answer (if any) is what the team had when it stopped"
    else:
        message = f"failed: {entry.error}"
    return RunResult(**base, message=message)


def _compare_result(entry: SwarmTask, base: dict[str, Any]) -> RunResult:
    """A comparison's result: no one answer, a summary row per method (the answers are in the rows)."""
    rows = list(entry.compare_rows or [])
    failed = [r["method"] for r in rows if r.get("state") == "failed"]
    said = f"; failed: {', '.join(failed)}" if failed else ""
    if entry.status == TaskStatus.COMPLETED:
        message = f"compared {len(rows)} methods{said}: each row has its answer, verdict, calls, tokens and wall time"
    elif entry.status == TaskStatus.CANCELLED:
        message = f"cancelled: the rows hold what each method had when it stopped{said}"
    else:
        message = f"failed: {entry.error}"
    return RunResult(**base, summary=rows, termination_reason=entry.status, message=message)


def cancel_result(entry: SwarmTask, cancelled: bool) -> CancelResult:
    if cancelled:
        message = "asked the swarm to stop; it saves its session and swarm_status says cancelled in a moment"
    else:
        message = f"the swarm had already ended ({entry.status}); nothing to cancel"
    return CancelResult(task_id=entry.id, status=entry.status, cancelled=cancelled,
                        message=message)


# --- topology ---------------------------------------------------------------------------------


def _light(value: Any) -> Any:
    """Scores rounded; nested bulky fields left out."""
    if isinstance(value, float):
        return round(value, SCORE_DIGITS)
    if isinstance(value, list):
        return [_light(v) for v in value]
    if isinstance(value, dict):
        return {k: _light(v) for k, v in value.items() if k not in BULKY_FIELDS}
    return value


def graph_of(event: ev.Event) -> dict[str, Any]:
    """One graph event as a small dict: its own fields, with a nested ``routing`` (or ``graph``)
    object flattened into it, minus the bulky fields."""
    data = event.to_dict()
    out: dict[str, Any] = {"kind": event.type}
    for key, value in data.items():
        if key in BULKY_FIELDS:
            continue
        if key in ("routing", "graph") and isinstance(value, dict):
            out.update(_light(value))
        else:
            out[key] = _light(value)
    return out


def topology(events: list[ev.Event]) -> list[RoundTopology]:
    fold = _TopologyFold()
    for event in events:
        fold(event)
    return [fold.rounds[n] for n in sorted(fold.rounds)]


# What a round's topology takes from the flow events (_TopologyFold's ``@TOPOLOGY.on`` methods); any other
# event with a round that is not a flow event is one of the round's graphs.
TOPOLOGY: EventTable[_TopologyFold] = EventTable()


class _TopologyFold:
    def __init__(self) -> None:
        self.rounds: dict[int, RoundTopology] = {}
        self.pending_goal = ""

    def at(self, number: int) -> RoundTopology:
        if number not in self.rounds:
            self.rounds[number] = RoundTopology(round=number, goal=self.pending_goal)
        return self.rounds[number]

    def __call__(self, event: ev.Event) -> None:
        number = getattr(event, "round", None)
        if not isinstance(number, int):
            return
        if not TOPOLOGY.dispatch(self, event) and event.type not in FLOW_EVENTS:
            self.at(number).graphs.append(graph_of(event))

    @TOPOLOGY.on(ev.RoundStarted)
    def _round_started(self, event: ev.RoundStarted) -> None:
        self.at(event.round).params = dict(event.params)

    @TOPOLOGY.on(ev.ManagerDecided)
    def _decided(self, event: ev.ManagerDecided) -> None:
        if event.plan:
            self.at(event.round).goal = self.pending_goal = event.next_goal
        else:
            self.at(event.round).decision = {"terminate": event.terminate, "next_goal": event.next_goal,
                                             "reasoning": event.reasoning, "status": event.status}
            self.pending_goal = event.next_goal or self.pending_goal

    @TOPOLOGY.on(ev.MessagesRouted)
    def _routed(self, event: ev.MessagesRouted) -> None:
        if event.broadcast:
            self.at(event.round).broadcast = True

    @TOPOLOGY.on(ev.GoalReplaced)
    def _goal_replaced(self, event: ev.GoalReplaced) -> None:
        self.at(event.round).goal = event.goal  # the round ran with the user's goal: that is its goal
