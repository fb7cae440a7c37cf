"""The run screen's agent panes: one per agent, laid out in a grid that follows the team's size and the
terminal's, streamed text copied in on each frame (a few panes per frame when many stream), and the keys
that act on the focused pane (maximize, copy, its inbox)."""

from __future__ import annotations

from textual.containers import Grid
from textual.screen import Screen
from textual.widget import Widget

from core.runtime import events as ev

from ..model import RoundView, RunModel, steer_line
from ..widgets.agent_pane import AgentPane
from ..widgets.results_pane import ResultsPane
from .inbox import inbox_count

NARROW_WIDTH, SHORT_HEIGHT = 100, 30
STREAMS_PER_FRAME = 6  # streaming panes redrawn per frame; the rest wait their turn (see _deferred_streams)
CROWDED_AT = 9  # more agents than this: compact panes of a fixed height in a scrolling grid


class AgentPanes(Screen[None]):
    """The agent panes of a screen showing a run (tui.screens.swarm_view.SwarmScreen)."""

    model: RunModel
    view_round: int | None  # None: follow the current round
    _panes: dict[str, AgentPane]
    _frames: int
    _stream_synced: dict[str, int]
    _shown_delta_rev: int

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

    @property
    def shown_round(self) -> int:
        return self.view_round if self.view_round is not None else self.model.current

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
