"""What the run screen knows, built only from the event stream (docs/architecture.md, rule 2).

RunModel is plain Python (no Textual): ``apply(event)`` folds one core event into per-round records.
The live run, a replay and the tests all feed it the same events; widgets only read it. Text enters
through ``apply`` only, made printable there (core.runtime.textsafe): Textual strips a few control
characters (BEL, CR, …) but passes ESC and C1 to the terminal, so a reply could set the window title or
clear the screen. ``rev`` grows
with every change that is not a token delta, so widgets can skip redraws when nothing moved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.routing.dytopo import RoutingResult
from core.runtime import events as ev
from core.runtime.config import DEFAULT_STRATEGY, RoundProtocol
from core.runtime.dispatch import EventTable, is_delta
from core.runtime.parsing import is_template_copy
from core.runtime.steering import SteerKind
from core.runtime.textsafe import printable, printable_fields

from .streamtext import ReplyStream

BADGE_WAITING = "waiting"
BADGE_DESCRIPTORS = "writing descriptors"
BADGE_WORKING = "working"
BADGE_SILENCED = "silenced"  # the user silenced it: no calls, no edges, no place in the order


def unit_mark(unit: str, number: int) -> str:
    """A round, step or turn by number, short: "R2" for DyTopo's rounds (as the screens always said),
    "step 2" / "turn 2" in the words of methods that step otherwise."""
    return f"R{number}" if unit == "round" else f"{unit} {number}"

# How RunModel folds each core event in (its ``@HANDLERS.on`` methods). Deltas take their own fast path in
# ``apply``; a trimmed memory shows in no pane. A method's own event types go to ``method_events``.
HANDLERS: EventTable[RunModel] = EventTable()
HANDLERS.ignore(ev.AgentDelta, ev.MemoryTrimmed)


@dataclass
class AgentView:
    name: str
    status: str = BADGE_WAITING  # waiting | writing descriptors | working | done | unparsed | failed
    call: str = ""
    text: str = ""  # streamed text of the current call, as shown: the public field's text, unescaped
    attempt: int = 0  # grows when a call (re)starts: panes reset their stream view
    public: str = ""
    query: str = ""
    key: str = ""
    answer: str = ""
    error: str = ""
    tier: int | None = None
    tokens: int = 0  # this round, every call
    latency_s: float = 0.0
    retried: bool = False  # asked again after it had answered this round (a retry): the answer shown is the new one
    _stream: ReplyStream = field(default_factory=ReplyStream, repr=False)

    @property
    def streaming(self) -> bool:
        return self.status in (BADGE_DESCRIPTORS, BADGE_WORKING)


@dataclass
class Decision:
    terminate: bool
    next_goal: str
    reasoning: str
    status: str
    final_answer: str = ""


@dataclass
class RoundView:
    number: int
    params: dict[str, Any]
    goal: str = ""
    goal_by_user: bool = False  # the round ran with the user's goal (GoalReplaced), not the Manager's
    replaced_goal: str = ""  # then: the Manager's goal it replaced
    agents: dict[str, AgentView] = field(default_factory=dict)
    routing: RoutingResult | None = None
    rerouted: bool = False
    broadcast: bool = False
    work_started: bool = False  # its graph is final: the work phase ran on it (no preview any more)
    inbox: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # agent -> routed messages
    decision: Decision | None = None
    finished: bool = False
    convergence: float | None = None
    tests: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(a.tokens for a in self.agents.values())

    def edge_count(self, n_workers: int) -> int:
        if self.routing is not None:
            return len(self.routing.edges)
        return n_workers * (n_workers - 1) if self.broadcast else 0

    @property
    def graph_known(self) -> bool:
        """Whether its edge count is known yet (a round in progress before routing has none)."""
        return self.routing is not None or self.broadcast or self.finished

    def used_params(self) -> tuple[float, int] | None:
        """(tau, k_in) this round's graph was built with (a re-route's values when re-routed), else
        the values in force when it started; None when unknown."""
        if self.routing is not None and not self.routing.typed:
            return self.routing.tau, self.routing.k_in
        if "tau" in self.params and "k_in" in self.params:
            return float(self.params["tau"]), int(self.params["k_in"])
        return None


def steer_agents(event: ev.UserSteered) -> set[str]:
    """The agents a steering event is about: a note's recipient ("all" for everyone), an action's agent,
    an edge's two ends."""
    return {str(event.payload.get(key, "")) for key in ("to", "agent", "src", "dst")} - {""}


def steer_line(event: ev.UserSteered) -> str:
    """One line for a steering action: ``✎ note → Tester: "check the edge cases"`` (refused ones say why)."""
    text = str(event.payload.get("text", "")).strip().splitlines()
    what = f"{event.action} {event.target}".strip()
    if text:
        first = text[0] if len(text[0]) <= 60 else text[0][:59] + "…"
        what += f': "{first}"'
    return f"✎ {what}" if event.accepted else f"✗ {what} (refused: {event.reason})"


def refusal_toast(event: ev.UserSteered) -> str:
    """One line for a refused action: its reason, after what was asked unless the reason says that itself
    ("cannot pin Tester→Tester: …", not "pin Tester→Tester: cannot pin Tester→Tester: …"); a long reason's
    trailing aside in parentheses is left to the session and its export."""
    asked = f"{event.action} {event.target}".strip()
    reason = event.reason
    if reason.endswith(")") and " (" in reason and len(reason) > 70:  # a trailing aside: the session keeps it
        reason = reason[: reason.rindex(" (")]
    said = asked and asked in reason.split(":", 1)[0]
    return f"not taken: {reason}" if said else f"not taken: {asked}: {reason}"


class RunReadings:
    """What the screens read of a run, derived from the state RunModel folds in (RunModel below)."""

    run: ev.RunStarted | None
    manager: str
    workers: list[str]
    extra_agents: list[str]
    strategy: str
    protocol: str
    params: dict[str, Any]
    rounds: dict[int, RoundView]
    current: int
    control_status: str
    finished: ev.RunFinished | None
    error: str
    started_ts: float | None
    last_ts: float | None

    @property
    def agents(self) -> list[str]:
        """Every agent with a pane: the Manager (a method may have none), the roster, then any agent the
        method created while running, in order of appearance."""
        return [*([self.manager] if self.manager else []), *self.workers, *self.extra_agents]

    @property
    def method_info(self) -> Any:
        """The run's method from the registry (None for a method this version does not know)."""
        from core.methods.catalogue import get_method_info
        from core.methods.registry import MethodError

        try:
            return get_method_info(self.strategy)
        except MethodError:
            return None

    @property
    def unit(self) -> str:
        """What the run's method steps by: round, step, turn (round for a method this version lacks)."""
        info = self.method_info
        return info.unit if info is not None else "round"

    @property
    def unit_limit(self) -> int | None:
        """The most units the run takes (MethodInfo.unit_limit of the params' max_rounds); None: its method
        counts none (single), or no params yet."""
        max_rounds = int(self.params.get("max_rounds", 0) or 0) if self.params else 0
        info = self.method_info
        if not max_rounds:
            return None
        return info.unit_limit(max_rounds) if info is not None else max_rounds

    @property
    def position(self) -> str:
        """Where the run is in its method's unit: "round 2/5", "step 1/1", "call 1"."""
        from core.methods.catalogue import unit_position

        return unit_position(self.strategy, self.current, int(self.params.get("max_rounds", 0) or 0))

    def place(self, round_no: int, view: AgentView | None) -> str:
        """Where an agent ran in the unit shown, in its method's words: DyTopo's "tier 1", TopoWeaver's
        plan "step 2", or, for a method whose agents of a unit run together (DMoA), "step 3"; "" when it
        has no place there (it did not run, or the protocol runs every agent at once)."""
        if view is None or view.tier is None:
            return ""
        info = self.method_info
        if info is None:
            return f"tier {view.tier}"
        if not info.layer:
            return f"{info.unit} {round_no}"
        return f"{info.layer} {view.tier + info.layer_base}"

    @property
    def has_manager(self) -> bool:
        """A Manager sets the goals and decides (RunStarted.manager): a method whose roster names none has no
        goal to show, round by round."""
        return bool(self.manager)

    @property
    def one_agent(self) -> bool:
        """The run has a single agent (single): no graph, no Manager, no edges to count."""
        return self.run is not None and len(self.agents) < 2

    @property
    def uses_tau(self) -> bool:
        """tau and k_in mean something to the run's method (before a run starts: assume they do)."""
        info = self.method_info
        return self.run is None or info is None or info.uses_tau

    @property
    def routes_by_tau(self) -> bool:
        """DyTopo's round loop (DyTopo and the graph baselines): round 1 broadcasts, tau/k_in route."""
        info = self.method_info
        return info is None or info.round_one_broadcast

    def round_view(self, number: int | None = None) -> RoundView | None:
        return self.rounds.get(self.current if number is None else number)

    @property
    def status_text(self) -> str:
        if self.error:
            return f"error: {self.error}"
        if self.finished is not None:
            return f"finished: {self.finished.reason}"
        return self.control_status

    @property
    def running(self) -> bool:
        return self.run is not None and self.finished is None and not self.error

    def elapsed(self, now: float | None) -> float:
        """Seconds since the run started: to ``now`` while live, to the last event when finished or
        replayed (now=None)."""
        if self.started_ts is None:
            return 0.0
        end = self.last_ts if (now is None or self.finished is not None) else now
        return max(0.0, (end or self.started_ts) - self.started_ts)

    @property
    def tiered(self) -> bool:
        """Whether a graph's tiers are how the agents run (phased work, a method's layers). In the
        single-pass protocol every worker answers at once: a graph has an order, no tiers."""
        return not (self.protocol == RoundProtocol.SINGLE_PASS and self.routes_by_tau)

    def edges_per_round(self) -> list[int]:
        """Kept edges per round; a round in progress counts once its graph is built (never as 0 before)."""
        return [self.rounds[r].edge_count(len(self.workers)) for r in sorted(self.rounds)
                if self.rounds[r].graph_known or r != self.current or self.finished is not None]

    def tokens_per_round(self) -> list[int]:
        """Tokens per round; a round in progress counts once it has used some."""
        return [self.rounds[r].tokens for r in sorted(self.rounds)
                if self.rounds[r].tokens or r != self.current or self.finished is not None]


class RunModel(RunReadings):
    """One run as the screens show it: every event folded in (live or replayed, the same handlers)."""

    def __init__(self) -> None:
        self.run: ev.RunStarted | None = None
        self.problem = ""
        self.domain = ""
        self.model_name = ""
        self.demo = False
        self.demo_played = ""  # the demo's own problem it played instead of the one asked (RunStarted.demo_played)
        self.protocol = ""
        self.manager = "Manager"
        self.workers: list[str] = []
        self.extra_agents: list[str] = []  # agents a method called that RunStarted did not list (a pane each)
        self.strategy = DEFAULT_STRATEGY
        self.method_events: list[ev.Event] = []  # events only a method's own view reads (e.g. DMoA's router)
        self.params: dict[str, Any] = {}
        self.rounds: dict[int, RoundView] = {}
        self.current = 0
        self.phase = ""
        self.phase_detail = ""
        self.control_status = "starting"
        self.mode = "auto"
        self.finished: ev.RunFinished | None = None
        self.error = ""  # the run could not start (endpoint down, ...)
        self.tokens = 0
        # Prompt tokens, and of them those the server took from its prefix cache (None: no reply said).
        self.prompt_tokens = 0
        self.cached_tokens: int | None = None
        # What the calls cost in US dollars (core.llm.prices), and the models no price was found for.
        self.cost_usd = 0.0
        self.cost_unknown: set[str] = set()
        self.copied = 0  # replies that copied the reply template (core.runtime.copies), not parsed
        self.started_ts: float | None = None
        self.last_ts: float | None = None
        self.next_goal = ""
        self.notices: list[ev.Notice] = []
        self.test_runs: list[ev.TestRun] = []  # every sandboxed test run, in order
        # Every steering action, taken or refused, in order, with the round it takes effect in.
        self.steered: list[tuple[int, ev.UserSteered]] = []
        self.silenced: set[str] = set()  # agents silenced (and not restored) so far
        self.preview: RoutingResult | None = None  # current round's graph at the live tau / k_in
        self.embeddings_ready = False
        self.rev = 0
        self.delta_rev = 0

    # --- folding events -----------------------------------------------------------------------
    def apply(self, event: ev.Event) -> None:
        self.last_ts = event.ts
        if is_delta(event):
            self._delta(event)  # the unescaped text is made printable there
            return
        event = printable_fields(event)  # a copy when it held control characters; the recorder keeps the raw one
        if not HANDLERS.dispatch(self, event) and type(event).__module__ != ev.__name__:  # a method's own type
            self.method_events.append(event)
        self.rev += 1

    def _agent(self, round_no: int, name: str) -> AgentView:
        rv = self._round(round_no)
        if name not in rv.agents:
            rv.agents[name] = AgentView(name)
        return rv.agents[name]

    def _round(self, number: int) -> RoundView:
        if number not in self.rounds:
            self.rounds[number] = RoundView(number, dict(self.params))
            for name in self.agents:
                self.rounds[number].agents[name] = AgentView(name)
        return self.rounds[number]

    def _delta(self, e: ev.AgentDelta) -> None:
        agent = self._agent(e.round, e.agent)
        added = agent._stream.feed(e.text)  # JSON-unescaped: "\\u001b" in the stream is an ESC here
        if added is None:  # not the JSON shape after all: the pane starts over with the whole reply
            agent.text = printable(agent._stream.text)
            agent.attempt += 1
        else:
            agent.text += printable(added)
        self.delta_rev += 1

    @HANDLERS.on(ev.RunStarted)
    def _on_run_started(self, e: ev.RunStarted) -> None:
        self.run = e
        self.problem, self.domain, self.protocol = e.problem, e.domain, e.protocol
        self.model_name, self.demo, self.demo_played = e.model, e.demo, e.demo_played
        self.manager, self.workers = e.manager, list(e.workers)
        self.extra_agents = []
        self.strategy = e.strategy or DEFAULT_STRATEGY
        self.params = dict(e.params)
        info = self.method_info
        if info is not None and "max_rounds" in self.params:  # DMoA counts L_max steps from its first step on:
            # say so from the start, not "step 0/5" then "step 1/20"
            self.params["max_rounds"] = info.max_rounds(e.method_options, int(self.params["max_rounds"]))
        self.started_ts = e.ts
        self.control_status = "running"

    @HANDLERS.on(ev.RoundStarted)
    def _on_round_started(self, e: ev.RoundStarted) -> None:
        self.current = e.round
        self.params = dict(e.params)
        rv = self._round(e.round)
        rv.params = dict(e.params)
        rv.goal = self.next_goal
        for name in self.silenced:
            self._silence(rv, name)
        self.preview = None
        self.phase, self.phase_detail = "", ""

    @HANDLERS.on(ev.PhaseStarted)
    def _on_phase_started(self, e: ev.PhaseStarted) -> None:
        self.phase, self.phase_detail = e.phase, e.detail
        if e.phase in (ev.Phase.WORK, ev.Phase.MANAGER):
            self._work_started(e.round)

    def _work_started(self, round_no: int) -> None:
        """The round's graph is the one its work runs on: a preview of other values ends here."""
        rv = self._round(round_no)
        rv.work_started = True
        if round_no == self.current:
            self.preview = None

    @HANDLERS.on(ev.AgentStarted)
    def _on_agent_started(self, e: ev.AgentStarted) -> None:
        if e.agent and e.agent not in self.agents:  # e.g. an agent of an orchestrator's plan
            self.extra_agents.append(e.agent)
        agent = self._agent(e.round, e.agent)
        if agent.public and e.call == agent.call:  # the same call again after its answer: the user's retry
            agent.retried = True
        agent.call = e.call
        agent.status = BADGE_DESCRIPTORS if e.call == ev.CallKind.DESCRIPTORS else BADGE_WORKING
        agent.text = ""
        agent._stream = ReplyStream()
        agent.attempt += 1
        if e.tier is not None and self.tiered:
            agent.tier = e.tier

    @HANDLERS.on(ev.AgentFinished)
    def _on_agent_finished(self, e: ev.AgentFinished) -> None:
        agent = self._agent(e.round, e.agent)
        agent.status = e.status
        agent.call = e.call
        agent.error = e.error
        used = e.prompt_tokens + e.completion_tokens
        agent.tokens += used
        agent.latency_s += e.latency_s
        self.tokens += used
        self.prompt_tokens += e.prompt_tokens
        if e.cached_tokens is not None:
            self.cached_tokens = (self.cached_tokens or 0) + e.cached_tokens
        if e.cost_usd is not None:
            self.cost_usd += e.cost_usd
        elif e.model and used:  # a reply whose model has no price (sessions from before costs have no model)
            self.cost_unknown.add(e.model)
        self.copied += is_template_copy(e.error)
        if e.call == ev.CallKind.DESCRIPTORS:
            agent.query, agent.key = e.query, e.key
            if e.status == ev.CallStatus.DONE:  # its work call is still to come
                agent.status = BADGE_WAITING
            return
        if e.query or e.key:
            agent.query, agent.key = e.query, e.key
        agent.public = e.public or (e.raw if e.status != ev.CallStatus.DONE else "")
        agent.answer = e.answer

    @HANDLERS.on(ev.DescriptorsReady)
    def _on_descriptors_ready(self, e: ev.DescriptorsReady) -> None:
        for name, desc in e.descriptors.items():
            agent = self._agent(e.round, name)
            agent.query, agent.key = desc.get("query", ""), desc.get("key", "")

    @HANDLERS.on(ev.TopologyBuilt)
    def _on_topology_built(self, e: ev.TopologyBuilt) -> None:
        rv = self._round(e.round)
        rv.routing = RoutingResult.from_dict(e.routing)
        rv.rerouted = rv.rerouted or e.rerouted
        self.embeddings_ready = True
        for name in rv.routing.names:
            tier = rv.routing.tier_of(name)
            self._agent(e.round, name).tier = tier if tier >= 0 and self.tiered else None
        for name in rv.routing.inactive:  # not running here; the badge only for whom the user silenced (DMoA's
            if name in self.silenced:  # unselected agents are inactive too)
                self._silence(rv, name)
        self.preview = None
        self.refresh_preview()

    @HANDLERS.on(ev.MessagesRouted)
    def _on_messages_routed(self, e: ev.MessagesRouted) -> None:
        rv = self._round(e.round)
        if e.broadcast:
            rv.broadcast = True
        for d in e.deliveries:
            dst = str(d.get("dst", ""))
            # Sent after the recipient's work (a broadcast, a single-pass barrier, a kept cycle's edge):
            # it reads it in the next round.
            after = e.broadcast or bool(rv.agents.get(dst) and rv.agents[dst].public)
            rv.inbox.setdefault(dst, []).append({**d, "after_work": after})
        self._work_started(e.round)

    @HANDLERS.on(ev.ManagerDecided)
    def _on_manager_decided(self, e: ev.ManagerDecided) -> None:
        rv = self._round(e.round)
        if e.plan:
            rv.goal = e.next_goal
        else:
            rv.decision = Decision(e.terminate, e.next_goal, e.reasoning, e.status, e.final_answer)
        self.next_goal = e.next_goal

    @HANDLERS.on(ev.GoalReplaced)
    def _on_goal_replaced(self, e: ev.GoalReplaced) -> None:
        rv = self._round(e.round)
        rv.goal, rv.goal_by_user, rv.replaced_goal = e.goal, True, e.replaced

    @HANDLERS.on(ev.RoundFinished)
    def _on_round_finished(self, e: ev.RoundFinished) -> None:
        rv = self._round(e.round)
        rv.finished = True
        rv.convergence = e.convergence
        self._work_started(e.round)

    @HANDLERS.on(ev.RunFinished)
    def _on_run_finished(self, e: ev.RunFinished) -> None:
        self.finished = e
        self.phase, self.phase_detail = "", ""

    @HANDLERS.on(ev.ParamsChanged)
    def _on_params_changed(self, e: ev.ParamsChanged) -> None:
        self.params = dict(e.params)
        self.refresh_preview()

    @HANDLERS.on(ev.ControlChanged)
    def _on_control_changed(self, e: ev.ControlChanged) -> None:
        self.control_status, self.mode = e.status, e.mode

    @HANDLERS.on(ev.Notice)
    def _on_notice(self, e: ev.Notice) -> None:
        self.notices.append(e)

    @HANDLERS.on(ev.TestRun)
    def _on_test_run(self, e: ev.TestRun) -> None:
        self.test_runs.append(e)
        self._round(e.round).tests.append(f"{e.outcome}" + (f": {e.failing_test}" if e.failing_test else ""))

    @HANDLERS.on(ev.UserSteered)
    def _on_user_steered(self, e: ev.UserSteered) -> None:
        # The round it takes effect in: taken at the barrier after a finished round, the next one.
        done = e.round < 1 or (e.round in self.rounds and self.rounds[e.round].finished)
        self.steered.append((e.round + 1 if done else e.round, e))
        agent = str(e.payload.get("agent", ""))
        if e.accepted and e.action == SteerKind.SILENCE:
            self.silenced.add(agent)
        elif e.accepted and e.action == SteerKind.RESTORE:
            self.silenced.discard(agent)

    def _silence(self, rv: RoundView, name: str) -> None:
        """A silenced agent's badge in a round it does not run: ``silenced``, with no tier or step."""
        view = rv.agents.get(name)
        if view is not None and not view.public and not view.streaming:
            view.status, view.tier = BADGE_SILENCED, None

    def steered_in(self, round_no: int, agent: str = "") -> list[ev.UserSteered]:
        """The actions taken that take effect in round ``round_no`` (about ``agent`` when given; a note to
        all is about every worker that was called in that round, not the Manager)."""
        names = {agent} if agent == self.manager or not self._ran(round_no, agent) else {agent, "all"}
        return [e for r, e in self.steered if r == round_no and e.accepted and (not agent or names & steer_agents(e))]

    def _ran(self, round_no: int, agent: str) -> bool:
        """The agent was called in that round: a note "to all" reached it (DMoA's next step runs only the agents
        the router picks; a silenced agent gets no call)."""
        rv = self.rounds.get(round_no)
        view = rv.agents.get(agent) if rv is not None else None
        return view is not None and bool(view.call) and view.status != BADGE_SILENCED

    @property
    def steered_count(self) -> int:
        """Steering actions taken (refused ones are not counted: they changed nothing)."""
        return sum(1 for _, e in self.steered if e.accepted)

    # --- previews -----------------------------------------------------------------------------
    def refresh_preview(self) -> None:
        """Redraw the current round's graph at the live tau / k_in from the stored similarities."""
        rv = self.round_view()
        self.preview = None
        if rv is None or rv.routing is None or not self.params or rv.work_started or rv.finished:
            return  # a preview lives only between the round's routing and its work
        tau, k_in = float(self.params["tau"]), int(self.params["k_in"])
        if (tau, k_in) == (rv.routing.tau, rv.routing.k_in):
            return
        self.preview = reroute(rv.routing, tau, k_in, self.protocol)
        self.rev += 1


def reroute(routing: RoutingResult, tau: float, k_in: int, protocol: str) -> RoutingResult:
    """The graph the same similarities give at another tau / k_in (pure; core.routing.dytopo does the work).
    The user's pins and cuts of that round stay what they were: only tau and k_in change."""
    from core.routing.dytopo import route_from_similarity

    return route_from_similarity(
        routing.names, routing.similarity, tau, k_in, break_cycles=protocol != "single-pass",
        pinned=routing.pinned_pairs, cut=routing.cut_pairs, silenced=frozenset(routing.inactive),
    )
