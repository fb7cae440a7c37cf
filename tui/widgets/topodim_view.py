"""TopoDIM's view: the typed graph of the run (a style per edge type, each edge's probability, masked and
pruned edges with the reason on ``d``, dropped agents greyed), the numbered call list with modes as in
the paper's case study ("1/9 … 9/9"), the edge-type histogram and R_div; ``g`` shows every pair's
4-way distribution. It replaces the graph pane when the run's strategy is ``topodim``.

``TopoDIMState`` folds the event stream (plain Python, reset by each RunStarted, so a replay that steps
back and re-applies events rebuilds it); ``render_topodim`` draws it as Rich lines; the widget only
shows them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.widgets import Static

from core.methods.topodim.events import TopoDIMCall, TopoDIMGraph
from core.runtime import events as ev
from core.runtime.dispatch import EventTable

from .drawing_pane import DrawingPane
from .method_views import MethodView, register_view

if TYPE_CHECKING:
    from ..model import RunModel
    from .graph_pane import GraphPane

STRATEGY = "topodim"
SHORT = {"conditioned": "cond", "feedback": "fbk", "debate": "dbt", "none": "∅"}
# conditioned solid →, feedback dashed ↺, debate double ⇄ (TopoDIM's three interaction modes, §3.1; the glyphs are ours)
LINES = {"conditioned": ("──", "──▶"), "feedback": ("┄┄", "┄┄↺"), "debate": ("══", "══⇄")}
REASONS = {"masked": "masked", "pruned": "pruned"}
MARKS = {"pending": "·", "running": "▶", "done": "✓", "unparsed": "?", "failed": "✗", "skipped": "–",
         "stopped": "■"}


class CallState(StrEnum):
    """Where one scheduled call is: waiting its turn, under way, ended as the engine's CallStatus says, skipped
    (what it needed never came) or stopped by the run's end."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    UNPARSED = "unparsed"
    FAILED = "failed"
    SKIPPED = "skipped"
    STOPPED = "stopped"


ENDED = frozenset({CallState.DONE, CallState.UNPARSED, CallState.FAILED, CallState.SKIPPED})
# How TopoDIMState folds the stream: RESETS starts it over (each run, or a replay folding again); FOLDS are the
# events of a TopoDIM run it shows. Anything else (token deltas, other kinds) changes nothing here.
RESETS: EventTable[TopoDIMState] = EventTable()
FOLDS: EventTable[TopoDIMState] = EventTable()


@dataclass
class CallView:
    index: int
    total: int
    agent: str
    mode: str
    partner: str
    status: CallState = CallState.PENDING
    reason: str = ""


@dataclass
class TopoDIMState:
    """Everything the view shows, from the events only."""

    active: bool = False  # the run is a TopoDIM run
    graph: TopoDIMGraph | None = None
    calls: list[CallView] = field(default_factory=list)
    finished: bool = False
    rev: int = 0

    def apply(self, event: ev.Event) -> None:
        if RESETS.dispatch(self, event) or not self.active:
            return
        if FOLDS.dispatch(self, event):
            self.rev += 1

    @RESETS.on(ev.RunStarted)
    def _run_started(self, event: ev.RunStarted) -> None:
        """A new run, or a replay folding its events again."""
        rev = self.rev
        self.__init__()  # type: ignore[misc]
        self.active = event.strategy == STRATEGY
        self.rev = rev + 1  # never reused: the view redraws whenever the state may differ

    @FOLDS.on(TopoDIMGraph)
    def _graph(self, event: TopoDIMGraph) -> None:
        self.graph = event
        self.calls = [
            CallView(c["index"], c["total"], c["agent"], c["mode"], c.get("partner", "")) for c in event.calls
        ]

    @FOLDS.on(TopoDIMCall)
    def _call_started(self, event: TopoDIMCall) -> None:
        call = self._call(event.index)
        if call is not None:
            call.status = CallState.SKIPPED if event.skipped else CallState.RUNNING
            call.reason = event.reason

    @FOLDS.on(ev.AgentFinished)
    def _agent_finished(self, event: ev.AgentFinished) -> None:
        running = next((c for c in self.calls if c.status == CallState.RUNNING), None)
        if running is not None and running.agent == event.agent and running.mode == event.call:
            running.status = CallState(event.status)

    @FOLDS.on(ev.RunFinished)
    def _run_finished(self, _event: ev.RunFinished) -> None:
        self.finished = True
        for call in self.calls:
            if call.status == CallState.RUNNING:
                call.status = CallState.STOPPED

    def _call(self, index: int) -> CallView | None:
        return next((c for c in self.calls if c.index == index), None)


@dataclass(frozen=True)
class ViewStyles:
    node: str = "bold"
    dropped: str = "dim strike"
    kinds: dict[str, str] = field(default_factory=lambda: {"conditioned": "", "feedback": "", "debate": ""})
    score: str = "bold"
    removed: str = "dim"
    legend: str = "italic"
    done: str = ""
    failed: str = ""
    running: str = "bold reverse"
    active: str = "bold underline"


def _wrap_boxes(boxes: list[tuple[str, str]], width: int) -> list[Text]:
    lines = [Text()]
    for box, style in boxes:
        if lines[-1].cell_len and lines[-1].cell_len + len(box) + 1 > width:
            lines.append(Text())
        lines[-1].append(box, style)
        lines[-1].append(" ")
    return lines


def _edge_line(e: dict[str, Any], pad: int, styles: ViewStyles) -> Text:
    kind = e["kind"]
    left, right = LINES.get(kind, ("──", "──▶"))
    style = styles.kinds.get(kind, "")
    line = Text(e["src"].rjust(pad), styles.node)
    line.append(f" {left}{SHORT.get(kind, kind)} ", style)
    line.append(f"{e['p']:.2f}", styles.score)
    line.append(f"{right} ", style)
    line.append(e["dst"], styles.node)
    return line


def _histogram(graph: TopoDIMGraph, styles: ViewStyles) -> Text:
    """Kept edges per type and eq. 10's R_div (its maximum, ln 3, when all three types are equal)."""
    line = Text()
    most = max(graph.histogram.values(), default=0) or 1
    for kind in ("conditioned", "feedback", "debate"):
        count = graph.histogram.get(kind, 0)
        bar = "█" * round(3 * count / most) if count else "·"
        line.append(f"{SHORT[kind]} {bar}{count}  ", styles.kinds.get(kind, ""))
    line.append(f"R_div {graph.r_div:.2f}/{math.log(3):.2f}", styles.score)
    return line


_CALL_TEXT = {
    "solution": "{agent}{inputs}",
    "evaluate": "{agent} reviews {partner}",
    "revise": "{agent} ← {partner}'s review",
    "challenge": "{agent} ⇄ {partner}",
    "defend": "{agent} ⇄ {partner}",
    "final": "{agent} ← all kept agents",
}


def _call_line(call: CallView, styles: ViewStyles) -> Text:
    style = {"running": styles.running, "done": styles.done, "failed": styles.failed, "unparsed": styles.failed,
             "skipped": styles.removed, "stopped": styles.removed}.get(call.status, "")
    inputs = f" ← {call.partner}" if call.partner else ""
    what = _CALL_TEXT.get(call.mode, "{agent}").format(agent=call.agent, partner=call.partner, inputs=inputs)
    line = Text(f"{MARKS.get(call.status, '·')} {call.index}/{call.total} {call.mode:<9} ", style)
    line.append(what, style)
    if call.status == CallState.SKIPPED and call.reason:
        line.append(f" ({call.reason})", styles.removed)
    return line


def render_topodim(
    state: TopoDIMState,
    width: int,
    *,
    show_removed: bool = False,
    distributions: bool = False,
    active: frozenset[str] = frozenset(),
    styles: ViewStyles | None = None,
) -> list[Text]:
    """Header, nodes (✗ dropped by eq. 9), kept edges by type (or every pair's p(r) with ``distributions``),
    removed edges with ``show_removed``, the type histogram and R_div, the numbered call list, a legend."""
    st = styles or ViewStyles()
    graph = state.graph
    if graph is None:
        return [Text("TopoDIM: the typed graph is drawn once, at the start of the run…", st.legend)]
    kept = [e for e in graph.edges if e["status"] == "kept"]
    removed = [e for e in graph.edges if e["status"] != "kept"]
    sampled = sum(1 for e in graph.edges if e["status"] in ("kept", "pruned"))
    temp = f" · τ {graph.temperature:.2f}" if graph.temperature is not None else ""
    lines = [Text(f"{graph.generator} · α {graph.alpha:.2f}{temp} · kept {len(kept)} of {sampled} sampled edges",
                  st.legend)]
    if graph.weights:
        lines.append(Text(f"policy: {graph.weights}", st.legend))
    order = {name: i + 1 for i, name in enumerate(graph.names)}
    boxes = []
    for name in graph.names:
        if name in graph.dropped:
            boxes.append((f"[{order[name]} {name} ✗]", st.dropped))
        else:
            boxes.append((f"[{order[name]} {name}]", f"{st.node} {st.active}" if name in active else st.node))
    lines += _wrap_boxes(boxes, width)
    pad = max((len(e["src"]) for e in graph.edges), default=0)
    if distributions:
        lines.append(Text(f"p(r) per pair: ∅ cond fbk dbt (✗ masked, eq. 7) → drawn · seed {graph.seed}", st.legend))
        for d in graph.decisions:
            if d["relation"] == "none" and not d["masked"]:
                continue
            line = Text(f"{d['src'].rjust(pad)}→{d['dst']}".ljust(2 * pad + 2), st.node)
            for relation, p in zip(("none", "conditioned", "feedback", "debate"), d["dist"], strict=False):
                mark = "✗" if d["masked"] == relation else " "
                line.append(f" {p:.2f}{mark}", st.kinds.get(relation, st.removed))
            line.append(f"→ {SHORT.get(d['relation'], d['relation'])}", st.score)
            lines.append(line)
    else:
        lines += [_edge_line(e, pad, st) for e in kept]
        if graph.fallback:
            lines.append(Text("no edge survived: every agent answers alone", st.removed))
        if removed and show_removed:
            lines.append(Text("removed: pruned = outside the top 1−α (eq. 8) · masked = would close a "
                              "cond/dbt cycle (eq. 7)", st.legend))
            for e in removed:
                lines.append(Text(f"{e['src'].rjust(pad)} ··{SHORT.get(e['kind'], e['kind'])} {e['p']:.2f}··▷ "
                                  f"{e['dst']}  {REASONS.get(e['status'], e['status'])}", st.removed))
        elif removed:
            masked = sum(1 for e in removed if e["status"] == "masked")
            lines.append(Text(f"{len(removed) - masked} pruned + {masked} masked hidden (d)", st.removed))
    lines.append(_histogram(graph, st))
    lines.append(Text("─" * min(width, 40), st.removed))
    lines += [_call_line(call, st) for call in state.calls]
    legend = Text("→ cond  ", st.kinds.get("conditioned", ""))
    legend.append("↺ feedback  ", st.kinds.get("feedback", ""))
    legend.append("⇄ debate", st.kinds.get("debate", ""))
    legend.append("  ✗ dropped (eq. 9) · g p(r)", st.legend)
    lines.append(legend)
    return lines


@register_view("topodim")
class TopoDIMView(DrawingPane, MethodView):
    """Shown in the graph pane's place for TopoDIM runs (tui.screens.swarm_view); the Manager pane stays (the
    decision-maker decides)."""

    state_type = TopoDIMState
    reads_graph_keys = True  # its edge distributions (g) and pruned edges (d)

    SCOPED_CSS = False
    DEFAULT_CSS = """
    TopoDIMView { width: 5fr; display: none; }
    SwarmScreen.-finished TopoDIMView { width: 4fr; }
    SwarmScreen.-narrow TopoDIMView { width: 1fr; height: 14; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("TopoDIM typed graph", "topodim-body", id=id)
        self._last: tuple[TopoDIMState, dict[str, Any]] | None = None  # what sync was last given

    def _styles(self) -> ViewStyles:
        return ViewStyles(
            node=f"bold {self._color('foreground', 'white')}",
            kinds={
                "conditioned": self._color("primary", "blue"),
                "feedback": self._color("warning", "yellow"),
                "debate": self._color("accent", "magenta"),
                "none": "dim",
            },
            score=f"bold {self._color('foreground', 'white')}",
            done=self._color("success", "green"),
            failed=self._color("error", "red"),
            running=f"bold {self._color('background', 'black')} on {self._color('warning', 'yellow')}",
            active=f"underline {self._color('warning', 'yellow')}",
        )

    def on_resize(self) -> None:
        """Its width changes with the layout around it (a finished run widens the results): redraw for the
        width it has now, or rows drawn for the old one wrap mid-item ("[4" / "Mathematician]")."""
        if self._last is not None:
            self.call_after_refresh(self._redraw)

    def _redraw(self) -> None:
        if self._last is not None:
            self.sync(self._last[0], **self._last[1])

    def sync_view(self, model: RunModel, round_no: int, *, active: frozenset[str], graph: GraphPane,
                  state: Any = None) -> None:
        self.sync(state, show_removed=graph.show_removed, distributions=graph.matrix, active=active)

    def sync(self, state: TopoDIMState, *, show_removed: bool, distributions: bool,
             active: frozenset[str] = frozenset()) -> None:
        self._last = (state, {"show_removed": show_removed, "distributions": distributions, "active": active})
        # The scrollbar's room is left whether or not it shows yet: rows drawn before it appeared would wrap.
        scrollbar = 0 if self.show_vertical_scrollbar else self.styles.scrollbar_size_vertical
        width = max(20, self.scrollable_content_region.width - scrollbar)
        key = (state.rev, show_removed, distributions, active, width, self.app.theme)
        if key == self._key:
            return
        self._key = key
        self.border_title = "TopoDIM · p(r) per pair" if distributions else "TopoDIM typed graph"
        done = sum(1 for c in state.calls if c.status in ENDED)
        self.border_subtitle = f"calls {done}/{len(state.calls)}" if state.calls else ""
        self._lines = render_topodim(state, width, show_removed=show_removed, distributions=distributions,
                                     active=active, styles=self._styles())
        self.query_one("#topodim-body", Static).update(Text("\n").join(self._lines))
