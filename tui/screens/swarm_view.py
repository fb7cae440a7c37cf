"""The screen that shows a run, live or replayed: header, agent panes, graph, manager, results.

Every event goes through ``apply_event`` (the same path for the engine's stream and a replay). Token
deltas only touch the model; a 25 fps timer copies new text into the panes. Other events redraw at
once. Subclasses (live run, replay) say what the control keys do.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import BindingsMap
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widget import Widget

from core.routing.dytopo import RoutingResult
from core.runtime import events as ev
from core.sessions.export import FORMATS
from core.sessions.model import Session

from ..export import EXPORT_NAMES, ExportError, export_suffix, export_to_file
from ..method_keys import GRAPH_ACTIONS, Words, hidden_for, relabelled, words_for
from ..model import RoundView, RunModel, steer_line
from ..spectate import refused
from ..widgets.agent_pane import AgentPane
from ..widgets.dmoa_view import DmoaView
from ..widgets.footer import WrapFooter
from ..widgets.graph_pane import GraphPane
from ..widgets.header import ParamsBar, RunHeader
from ..widgets.manager_pane import ManagerPane
from ..widgets.results_pane import ResultsPane, RoundSparks
from ..widgets.search_bar import SearchBar
from ..widgets.topodim_view import TopoDIMState, TopoDIMView
from ..widgets.topoweaver_view import TopoWeaverView, shows_topoweaver
from .inbox import inbox_count
from .steer import ACTION_LABELS, SteerContext

FRAME_INTERVAL = 1 / 25  # how often streamed text reaches the panes
NARROW_WIDTH, SHORT_HEIGHT = 100, 30
TAU_ACTIONS = frozenset({"tau", "k_in", "reroute"})  # the keys that set or apply tau / k_in
STREAMS_PER_FRAME = 6  # streaming panes redrawn per frame; the rest wait their turn (see _deferred_streams)
CROWDED_AT = 9  # more agents than this: compact panes of a fixed height in a scrolling grid


class SwarmScreen(Screen[None]):
    live = True  # False in a replay: elapsed time comes from the events, not the clock

    def __init__(self) -> None:
        super().__init__()
        self.model = RunModel()
        self.view_round: int | None = None  # None: follow the current round
        self._shown_delta_rev = -1
        self._panes: dict[str, AgentPane] = {}
        self._frames = 0  # pane syncs so far, and the one at which each pane last showed new text
        self._stream_synced: dict[str, int] = {}
        self.topodim = TopoDIMState()  # TopoDIM runs show their typed graph instead of the graph pane
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
                yield DmoaView(id="dmoa")  # DMoA runs: in place of the graph and manager panes
                yield TopoDIMView(id="topodim")
                yield ManagerPane(id="manager")
                yield TopoWeaverView(id="topoweaver")
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

    def _relayout(self) -> None:
        narrow = self.size.width < NARROW_WIDTH or self.size.height < SHORT_HEIGHT
        self.set_class(narrow, "-narrow")
        n = max(1, sum(1 for pane in self._panes.values() if pane.display))
        # Large teams (up to 21 agents): more, smaller panes in a grid that scrolls with the body.
        crowded = n > CROWDED_AT
        self.set_class(crowded, "-crowded")
        if narrow:
            columns = 2 if crowded and self.size.width >= 60 else 1
        else:
            columns = 2 if n <= 4 else 3 if n <= 6 else 4 if n <= 12 else 5 if self.size.width < 200 else 6
        self.query_one("#agents", Grid).styles.grid_size_columns = columns

    def _roster(self) -> list[str]:
        return self.model.agents if self.model.run is not None or self.model.workers else []

    def _ensure_panes(self) -> None:
        """One pane per agent of the run, mounted once: agents a method names at run time join as they
        start; a replay stepping back hides the panes of agents that have not joined yet."""
        names = self._roster()
        if [n for n, p in self._panes.items() if p.display] == names:
            return
        joined = {name: AgentPane(name, id=f"agent-{name}") for name in names if name not in self._panes}
        if joined:
            self._panes.update(joined)
            self.query_one("#agents", Grid).mount(*joined.values())
        for name, pane in self._panes.items():
            pane.display = name in names
        team = self.model.run.team if self.model.run is not None else {}
        for agent in [team["manager"], *team["workers"]] if team else []:
            if agent.get("model") and agent["name"] in self._panes:
                self._panes[agent["name"]].model_name = str(agent["model"])
        self._relayout()

    # --- events -------------------------------------------------------------------------------
    def apply_event(self, event: ev.Event, *, render: bool = True) -> None:
        self.model.apply(event)
        self.topodim.apply(event)
        if isinstance(event, ev.AgentDelta):
            return
        if isinstance(event, ev.RunStarted):
            self._ensure_panes()
            self.use_method_keys()
            self.refresh_bindings()  # the keys the run's method uses
            self.set_class(event.strategy == "dmoa", "-dmoa")
            self._show_method_view()
        elif isinstance(event, ev.AgentStarted):
            self._ensure_panes()
        self.set_class(self.model.finished is not None, "-finished")
        if isinstance(event, ev.Notice):
            self.on_notice(event)
        if render:
            self.refresh_all()

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
            views = [*self.query(GraphPane), *self.query(TopoDIMView)]
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
        plans = [e for e in self.model.method_events if getattr(e, "type", "") == "topoweaver_plan"]
        return SteerContext(
            actions=actions,
            agents=[*self.model.workers, *self.model.extra_agents],
            focused=focused,
            initial=initial,
            long_texts={"goal": self.model.next_goal, "replace": latest.public if latest is not None else "",
                        "plan": str(getattr(plans[-1], "yaml", "")) if plans else ""},
            title=title or f"steer {self.model.strategy} · {self.model.position} · applies at the next barrier",
        )

    @property
    def takes_steering(self) -> bool:
        from core.methods.catalogue import steering_of

        return bool(steering_of(self.model.strategy))

    def _show_method_view(self) -> None:
        """A method with a view of its own (DMoA's router, TopoWeaver-R1's plans, TopoDIM's typed graph) shows
        it in place of the graph pane (and of the manager pane, where no Manager decides)."""
        strategy = self.model.strategy
        views = {
            DmoaView: strategy == "dmoa",
            TopoWeaverView: shows_topoweaver(self.model.run),
            TopoDIMView: strategy == "topodim",  # its typed graph; the Manager pane stays (it decides)
        }
        for view, shown in views.items():
            self.query_one(view).display = shown
        self.query_one(GraphPane).display = not any(views.values())
        # No Manager pane where no Manager decides (DMoA, TopoWeaver-R1) or one agent works alone (single).
        self.query_one(ManagerPane).display = not (views[DmoaView] or views[TopoWeaverView] or self.model.one_agent)
        self.query_one(RoundSparks).set_class(self.model.one_agent, "-no-edges")  # one agent: no edges to count

    def on_notice(self, event: ev.Notice) -> None:
        severity = {"error": "error", "warning": "warning"}.get(event.severity, "information")
        self.notify(event.message, severity=severity, timeout=4 if severity != "error" else 10)  # type: ignore[arg-type]

    # --- rendering ----------------------------------------------------------------------------
    @property
    def shown_round(self) -> int:
        return self.view_round if self.view_round is not None else self.model.current

    def now(self) -> float | None:
        """The clock for a live run's elapsed time; None means "time of the last event"."""
        return None

    def _frame(self) -> None:
        if self.model.delta_rev != self._shown_delta_rev:
            self._sync_panes()
        if self.live and self.model.running:
            self.query_one(RunHeader).sync(self.model, self.model.elapsed(self.now()))

    def _sync_panes(self) -> None:
        self._shown_delta_rev = self.model.delta_rev
        rv = self.model.round_view(self.shown_round)
        deferred = self._deferred_streams(rv)
        unit = self.model.unit
        if deferred:
            self._shown_delta_rev = -1  # their text is shown on a later frame
        for name, pane in self._panes.items():
            if name in deferred:
                continue
            self._stream_synced[name] = self._frames
            view = rv.agents.get(name) if rv else None
            earlier = None
            idle = view is not None and not view.streaming and not view.public
            if idle and view is not None and (not view.text or view.call == ev.CallKind.DESCRIPTORS):
                earlier = self._earlier_output(name, self.shown_round)
            pane.inbox_count = inbox_count(self.model, name, self.shown_round) if name != self.model.manager else 0
            pane.place, pane.unit = self.model.place(self.shown_round, view), unit
            pane.steer_marks = tuple(steer_line(e) for e in self.model.steered_in(self.shown_round, name))
            pane.sync(self.shown_round, view, earlier)

    def _deferred_streams(self, rv: RoundView | None) -> set[str]:
        """Panes whose new streamed text waits for a later frame. Redrawing every streaming pane on every
        frame made each frame long with 16 agents (bench/tui_stream.py --agents 16); at most
        STREAMS_PER_FRAME of them are redrawn per frame, those waiting longest first, so with 16
        streaming each pane still updates several times a second."""
        self._frames += 1
        if rv is None:
            return set()
        behind = [name for name, pane in self._panes.items() if pane.stream_behind(rv.agents.get(name))]
        if len(behind) <= STREAMS_PER_FRAME:
            return set()
        behind.sort(key=lambda name: self._stream_synced.get(name, 0))
        return set(behind[STREAMS_PER_FRAME:])

    def _earlier_output(self, name: str, before: int) -> tuple[int, str] | None:
        """An idle agent's latest output from an earlier round, shown until it speaks again."""
        for number in range(before - 1, 0, -1):
            rv = self.model.rounds.get(number)
            view = rv.agents.get(name) if rv else None
            if view is not None and view.public:
                return number, view.public
        return None

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
        view = self.query_one(TopoDIMView)
        if view.display:
            view.sync(self.topodim, show_removed=graph.show_removed, distributions=graph.matrix, active=active)
        self.query_one(ManagerPane).sync(model, self.shown_round)
        if self.query_one(DmoaView).display:
            self.query_one(DmoaView).sync(model, self.shown_round)
        weaver = self.query_one(TopoWeaverView)
        if weaver.display:
            weaver.sync(model, self.shown_round, active=active)
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

    def focused_pane(self) -> Widget | None:
        node = self.focused
        while node is not None and not hasattr(node, "copy_text"):
            node = node.parent if isinstance(node.parent, Widget) else None
        return node

    def action_toggle_maximize(self) -> None:
        if self.maximized is not None:
            self.minimize()
            return
        pane = self.focused_pane() or next(iter(self._panes.values()), None)
        if pane is not None:
            self.maximize(pane, container=False)

    def action_copy(self) -> None:
        pane = self.focused_pane() or self.query_one(ResultsPane)
        text = pane.copy_text()  # type: ignore[attr-defined]
        if not text:
            self.notify("nothing to copy in this pane yet", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {len(text)} characters")

    # --- an agent's inbox ----------------------------------------------------------------------
    def focused_agent(self) -> AgentPane | None:
        node = self.focused
        while node is not None and not isinstance(node, AgentPane):
            node = node.parent if isinstance(node.parent, Widget) else None
        return node

    def action_inbox(self) -> None:
        pane = self.focused_agent()
        if pane is None:
            self.notify("focus an agent's pane first (Tab), then enter shows what it received", severity="warning")
            return
        from .inbox import InboxScreen

        self.app.push_screen(InboxScreen(self.model, pane.agent, self.shown_round))

    # --- search -------------------------------------------------------------------------------
    def action_search(self) -> None:
        bar = self.query_one(SearchBar)
        if not bar.is_open:
            self._search_from = self.focused_agent()  # the search starts in the pane the user was in
        bar.open()

    def run_search(self, query: str) -> None:
        """Find ``query`` in every agent's pane, the focused one first, then the others in order."""
        names = list(self._panes)
        focused = self.focused_agent() or self._search_from
        if self._hit is not None and self._hits:
            start = names.index(self._hits[self._hit][0]) if self._hits[self._hit][0] in names else 0
        else:
            start = names.index(focused.agent) if focused is not None and focused.agent in names else 0
        self._hits = []
        for name in names[start:] + names[:start]:
            self._hits += [(name, row, col) for row, col in self._panes[name].search(query)] if query else []
            if not query:
                self._panes[name].end_search()
        self._hit = 0 if self._hits else None
        self._show_hit()

    def action_search_step(self, step: int) -> None:
        self.search_step(step)

    def search_step(self, step: int) -> None:
        bar = self.query_one(SearchBar)
        if not bar.is_open or not bar.text:  # f3 after the bar was closed: the last search again
            self.action_search()
            if not bar.text:
                return
        if not self._hits:
            self.run_search(bar.text)  # outputs may have grown since
        if self._hits:
            self._hit = ((self._hit or 0) + step) % len(self._hits) if self._hit is not None else 0
        self._show_hit()

    def _show_hit(self) -> None:
        bar = self.query_one(SearchBar)
        hit = self._hits[self._hit] if self._hit is not None and self._hits else None
        for name, pane in self._panes.items():
            pane.mark((hit[1], hit[2]) if hit is not None and hit[0] == name else None)
        if hit is None:
            bar.status("no match" if bar.text else "")
            return
        pane = self._panes[hit[0]]
        self.query_one("#body", VerticalScroll).scroll_to_widget(pane, animate=False)
        agents = len({h[0] for h in self._hits})
        shown = (self._hit or 0) + 1
        bar.status(f"{shown}/{len(self._hits)} · {hit[0]}" + (f" · in {agents} agents" if agents > 1 else ""))

    def end_search(self) -> None:
        bar = self.query_one(SearchBar)
        hit = self._hits[self._hit] if self._hit is not None and self._hits else None
        for pane in self._panes.values():
            pane.end_search()
        bar.remove_class("-open")
        self._hits, self._hit = [], None
        if hit is not None and hit[0] in self._panes:
            self._panes[hit[0]].focus_body()
        else:
            self.focus_next()

    def action_help(self) -> None:
        from .help import HelpScreen

        self.app.push_screen(HelpScreen(self))

    def action_open_sessions(self) -> None:
        self.app.open_session_picker()  # type: ignore[attr-defined]

    # --- export (command palette) -------------------------------------------------------------
    def export_source(self) -> tuple[Session | None, Path | None, str]:
        """(the session so far, the file it is saved in, why there is none)."""
        return None, None, "nothing to export"

    def palette_commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        """Commands for the palette that have no key: export in every format."""
        commands: list[tuple[str, str, Callable[[], object]]] = []
        for fmt in FORMATS:
            name = EXPORT_NAMES[fmt]
            commands.append((f"Export session as {name}", f"write {export_suffix(fmt)} to exports/ by the session file",
                             partial(self.export_as, fmt)))
        return commands

    def export_as(self, fmt: str) -> Path | None:
        session, base, why = self.export_source()
        if session is None or base is None:
            self.notify(why, severity="warning")
            return None
        sessions_dir = Path(getattr(getattr(self.app, "settings", None), "sessions_dir", "sessions"))
        try:
            path = export_to_file(session, base, fmt, sessions_dir)
        except ExportError as exc:
            self.notify(str(exc), severity="error", timeout=12)
            return None
        self.notify(f"exported {EXPORT_NAMES[fmt]}: {path}", timeout=10)
        return path
