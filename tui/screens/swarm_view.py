"""The screen that shows a run, live or replayed: header, agent panes, graph, manager, results.

Every event goes through ``apply_event`` (the same path for the engine's stream and a replay). Token
deltas only touch the model; a 25 fps timer copies new text into the panes. Other events redraw at
once. Subclasses (live run, replay) say what the control keys do.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import BindingsMap
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll

from core.routing.dytopo import RoutingResult
from core.runtime import events as ev
from core.runtime.dispatch import EventTable, is_delta

from ..method_keys import GRAPH_ACTIONS, Words, hidden_for, relabelled, words_for
from ..model import RunModel
from ..spectate import refused
from ..widgets.agent_pane import AgentPane
from ..widgets.footer import WrapFooter
from ..widgets.graph_pane import GraphPane
from ..widgets.header import ParamsBar, RunHeader
from ..widgets.manager_pane import ManagerPane
from ..widgets.method_views import MethodView, ViewState, compose_views, registered_views, view_for
from ..widgets.results_pane import ResultsPane, RoundSparks
from ..widgets.search_bar import SearchBar
from .steer import ACTION_LABELS, SteerContext
from .swarm_export import SessionExport
from .swarm_panes import STREAMS_PER_FRAME as STREAMS_PER_FRAME  # tests read it here
from .swarm_search import PaneSearch

FRAME_INTERVAL = 1 / 25  # how often streamed text reaches the panes
TAU_ACTIONS = frozenset({"tau", "k_in", "reroute"})  # the keys that set or apply tau / k_in

# What the screen itself does on an event beyond folding it into the model (its ``@REACTS.on`` methods):
# panes for a new roster, the method's keys and view, a notice's toast.
REACTS: EventTable[SwarmScreen] = EventTable()


class SwarmScreen(PaneSearch, SessionExport):
    live = True  # False in a replay: elapsed time comes from the events, not the clock

    def __init__(self) -> None:
        super().__init__()
        self.model = RunModel()
        self.view_round: int | None = None  # None: follow the current round
        self._shown_delta_rev = -1
        self._panes: dict[str, AgentPane] = {}
        self._frames = 0  # pane syncs so far, and the one at which each pane last showed new text
        self._stream_synced: dict[str, int] = {}
        # The registered method views' own state (TopoDIM's calls and typed graph), fed every event.
        self.view_states: dict[type, ViewState] = {
            cls: cls.state_type() for cls in registered_views().values() if cls.state_type is not None}
        self._hits: list[tuple[str, int, int]] = []  # the search's matches: (agent, row, column)
        self._hit: int | None = None  # the current one
        self._search_from: AgentPane | None = None  # the pane focused when the search opened
        self._words = Words()  # the unit and sub-step the keys are labelled in (DyTopo's until the method is known)

    # --- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield ParamsBar("", id="params")
        with VerticalScroll(id="body", can_focus=False):
            # The panes of a roster known before the run starts come with the first frame (no half-built
            # screen that fills in a moment later).
            self._panes = {name: AgentPane(name, id=f"agent-{name}") for name in self._roster()}
            with Grid(id="agents"):
                yield from self._panes.values()
            with Horizontal(id="lower"):
                yield GraphPane(id="graph")
                # Every method's own view (tui.widgets.method_views), hidden until its method's run starts.
                before, after = compose_views()
                yield from before
                yield ManagerPane(id="manager")
                yield from after
                with Vertical(id="side"):
                    yield ResultsPane(id="results")
                    yield RoundSparks(id="sparks")
        yield SearchBar(id="search")  # under the panes, above the footer, while a search is open
        yield WrapFooter()

    def on_mount(self) -> None:
        self.use_method_keys()
        self.set_interval(FRAME_INTERVAL, self._frame)
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        self._relayout()
        self.refresh_all(mounting=True)

    def _theme_changed(self, _theme: object) -> None:
        """Drawings that carry colours of their own (the graph) are redrawn in the new theme at once."""
        self.refresh_all()

    def on_resize(self) -> None:
        self._relayout()
        self.call_after_refresh(self.refresh_all)

    # --- events -------------------------------------------------------------------------------
    def apply_event(self, event: ev.Event, *, render: bool = True) -> None:
        self.model.apply(event)
        for state in self.view_states.values():
            state.apply(event)
        if is_delta(event):
            return
        REACTS.dispatch(self, event)
        self.set_class(self.model.finished is not None, "-finished")
        if render:
            self.refresh_all()

    @REACTS.on(ev.RunStarted)
    def _run_started(self, _event: ev.RunStarted) -> None:
        self._ensure_panes()
        self.use_method_keys()
        self.refresh_bindings()  # the keys the run's method uses
        self._show_method_view()

    @REACTS.on(ev.AgentStarted)
    def _agent_started(self, _event: ev.AgentStarted) -> None:
        self._ensure_panes()

    @REACTS.on(ev.Notice)
    def _notice(self, event: ev.Notice) -> None:
        self.on_notice(event)  # a replay says nothing (its notices are in the session)

    def use_method_keys(self) -> None:
        """The keys' labels and help in the run's method's words (tui.method_keys): "n call · N step" for
        TopoDIM, not DyTopo's "n phase · N round". The screen gets its own copy of its bindings."""
        words = words_for(self.model.method_info)
        if words == self._words:
            return
        self._words = words
        self._bindings = relabelled(type(self)._merged_bindings or BindingsMap(), words, replay=not self.live)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The tau / k_in keys only for a method that routes by them (DyTopo, the graph baselines): in a
        DMoA or TopoDIM run they would change numbers nothing reads. The graph keys (g, d) only where a view
        reads them: the graph pane, or TopoDIM's typed graph (its edge distributions, its pruned edges); DMoA's
        and TopoWeaver-R1's views have none. Keys the method has no use for at all (tui.method_keys.hidden_for:
        browsing a one-unit run, the graph of one agent) are hidden. A spectator's footer leaves out the keys it
        may not press (the app refuses them: tui.spectate)."""
        model = self.model
        if getattr(self.app, "spectate", False) and refused(action, replay=not self.live):
            return False
        if hidden_for(action, self._words, units=model.unit_limit, one_agent=model.one_agent):
            return False
        if action in TAU_ACTIONS:
            return self.model.uses_tau
        if action in ("steer", "steer_fork"):  # only a method that takes steering actions (its catalogue entry)
            return self.takes_steering
        if action in GRAPH_ACTIONS:
            views = [*self.query(GraphPane), *self._method_views(graph_keys=True)]
            return not views or any(view.display for view in views)
        return True

    def steer_context(self, initial: str = "note", *, title: str = "",
                      round_no: int | None = None) -> SteerContext | None:
        """What the steering dialog offers here (None: the method takes no action): the method's actions, its
        team, the focused agent, and the texts its editors start from as of ``round_no`` (default: the current
        round). The run screen steers the live run; a replay steers a fork from the round it shows."""
        from core.methods.catalogue import steering_of

        taken = {k.value for k in steering_of(self.model.strategy)}
        actions = [a for a in ACTION_LABELS if a in taken]
        if not actions:
            return None
        pane = self.focused_agent()
        focused = pane.agent if pane is not None and pane.agent != self.model.manager else ""
        rv = self.model.round_view(round_no)
        latest = rv.agents.get(focused) if rv is not None and focused else None
        own = view_for(self.model.strategy)
        return SteerContext(
            actions=actions,
            agents=[*self.model.workers, *self.model.extra_agents],
            focused=focused,
            initial=initial,
            long_texts={"goal": self.model.next_goal, "replace": latest.public if latest is not None else "",
                        "plan": "", **(own.steer_texts(self.model) if own is not None else {})},
            title=title or f"steer {self.model.strategy} · {self.model.position} · applies at the next barrier",
        )

    @property
    def takes_steering(self) -> bool:
        from core.methods.catalogue import steering_of

        return bool(steering_of(self.model.strategy))

    def _method_views(self, *, graph_keys: bool = False) -> list[MethodView]:
        """The registered method views composed here (``graph_keys``: those the graph keys g, d act on)."""
        views: list[MethodView] = [w for w in self.query("#lower > *") if isinstance(w, MethodView)]
        return [v for v in views if v.reads_graph_keys] if graph_keys else views

    def _show_method_view(self) -> None:
        """A method with a view of its own (tui.widgets.method_views: DMoA's router, TopoWeaver-R1's plans,
        TopoDIM's typed graph) shows it in place of the graph pane (and of the manager pane, where no Manager
        decides); any other method shows the generic per-step graph pane."""
        own = view_for(self.model.strategy)
        for view in self._method_views():
            shown = type(view) is own
            view.display = shown  # type: ignore[attr-defined]
            if view.screen_class:
                self.set_class(shown, view.screen_class)
        self.query_one(GraphPane).display = own is None
        # No Manager pane where no Manager decides (DMoA, TopoWeaver-R1), the method's roster names no Manager
        # (a plugin's agents that answer and read each other: no goal to show), or one agent works alone (single).
        hides = own is not None and own.hides_manager
        self.query_one(ManagerPane).display = not (hides or self.model.one_agent or not self.model.has_manager)
        self.query_one(RoundSparks).set_class(self.model.one_agent, "-no-edges")  # one agent: no edges to count

    def on_notice(self, event: ev.Notice) -> None:
        severity = {"error": "error", "warning": "warning"}.get(event.severity, "information")
        # Plain text: a notice quotes models and validators ("[YAML_LOGIC_INVALID]", an agent id), never markup.
        self.notify(event.message, severity=severity, timeout=4 if severity != "error" else 10,  # type: ignore[arg-type]
                    markup=False)

    # --- rendering ----------------------------------------------------------------------------
    def now(self) -> float | None:
        """The clock for a live run's elapsed time; None means "time of the last event"."""
        return None

    def _frame(self) -> None:
        if self.model.delta_rev != self._shown_delta_rev:
            self._sync_panes()
        if self.live and self.model.running:
            self.query_one(RunHeader).sync(self.model, self.model.elapsed(self.now()))

    def params_extra(self) -> str:
        return ""

    def replay_status(self) -> str:
        """A replay's own state for the header ("" in a live run: the engine's status is the truth)."""
        return ""

    def tests_state(self) -> str:
        """Whether code tests run after each round: "on", "off" (or "" when it does not apply)."""
        return ""

    def graph_override(self) -> tuple[RoutingResult | None, str]:
        """A graph to draw instead of the viewed round's own: the live preview at new tau / k_in."""
        if self.shown_round == self.model.current and self.model.preview is not None:
            return self.model.preview, "PREVIEW"
        return None, ""

    def refresh_all(self, *, mounting: bool = False) -> None:
        """Sync every widget with the model. ``mounting``: from on_mount, where the children exist but
        the screen does not count as mounted yet; the first frame must not be a half-filled one."""
        if not (self.is_mounted or mounting) or self.app._exit or not self.is_attached:
            return
        self._ensure_panes()
        model = self.model
        self.query_one(RunHeader).sync(model, model.elapsed(self.now()), self.replay_status())
        tests = self.tests_state()
        self.query_one(ParamsBar).sync(model, self.view_round, self.params_extra(), tests, self.live)
        rv = model.round_view(self.shown_round)
        active = frozenset(n for n, a in rv.agents.items() if a.streaming) if rv else frozenset()
        override, tag = self.graph_override()
        graph = self.query_one(GraphPane)
        graph.sync(model, self.shown_round, override=override, tag=tag, active=active)
        self.query_one(ManagerPane).sync(model, self.shown_round)
        for view in self._method_views():
            if view.display:  # type: ignore[attr-defined]
                view.sync_view(model, self.shown_round, active=active, graph=graph,
                               state=self.view_states.get(type(view)))
        self.query_one(ResultsPane).sync(model, tests)
        self.query_one(RoundSparks).sync(model)
        self._sync_panes()

    # --- view actions (shared) ----------------------------------------------------------------
    def action_browse(self, step: int) -> None:
        current = self.model.current
        if current == 0:
            return
        target = max(1, min(current, (self.view_round or current) + step))
        self.view_round = None if (step > 0 and target >= current) else target
        self.refresh_all()

    def action_toggle_matrix(self) -> None:
        graph = self.query_one(GraphPane)
        graph.matrix = not graph.matrix
        self.refresh_all()
        if graph.display:  # a large team's graph sits below its panes: bring the view just asked for into sight
            self.query_one("#body", VerticalScroll).scroll_to_widget(graph, animate=False, top=True)

    def action_toggle_removed(self) -> None:
        graph = self.query_one(GraphPane)
        graph.show_removed = not graph.show_removed
        self.refresh_all()

    def action_toggle_problem(self) -> None:
        header = self.query_one(RunHeader)
        header.show_full = not header.show_full
        self.refresh_all()

    def action_help(self) -> None:
        from .help import HelpScreen

        self.app.push_screen(HelpScreen(self))

    def action_open_sessions(self) -> None:
        self.app.open_session_picker()  # type: ignore[attr-defined]
