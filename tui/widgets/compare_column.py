"""One method's column on the compare screen: status in the method's own unit, cost so far, a compact view
of its current topology, its latest message and, when done, its answer and verdict.

It reads a RunModel (fed the method's events, tui.model) and the method's summary row; it draws only when
``changes`` moved since its last draw (the screen ticks it a few times a second)."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from core.methods.catalogue import get_method_info
from core.methods.registry import GraphShape, MethodError
from core.runtime import events as ev
from core.runtime.dispatch import EventTable
from core.sessions.compare_record import CompareRow, RowState

from ..model import RunModel

LATEST_LINES = 4  # lines of the latest message shown
# The events that say which agent spoke last (its latest message is the one shown).
SPOKE: EventTable[CompareColumn] = EventTable()
STATE_STYLE = {"done": "green", "failed": "bold red", "cancelled": "yellow", "running": "cyan", "waiting": "dim",
               "replay": "cyan"}


def graph_shape(method: str) -> GraphShape:
    """How ``method``'s graph reads in one line (its MethodInfo); edges for a method this version lacks."""
    try:
        return get_method_info(method).graph_shape
    except MethodError:
        return GraphShape.EDGES


def topology_line(model: RunModel, method: str) -> str:
    """The current topology in one or two lines: DyTopo/TopoDIM edges, DMoA's selected agents,
    TopoWeaver's layers."""
    rv = model.round_view()
    if rv is None:
        return "—"
    if rv.routing is None:
        if rv.broadcast:
            return "broadcast: everyone to everyone"
        if len(model.agents) < 2:
            return "none: one agent"
        return "none built" if model.finished is not None else "not built yet"
    routing = rv.routing
    shape = graph_shape(method.split(" #")[0])
    if shape is GraphShape.SELECTION:
        chosen = routing.tiers[0] if routing.tiers else []
        return "selected: " + (", ".join(chosen) or "none")
    if shape is GraphShape.LAYERS and routing.tiers:
        return "layers: " + " | ".join(", ".join(tier) for tier in routing.tiers)
    edges = ", ".join(f"{e.src}→{e.dst}" for e in routing.edges) or "no edges"
    return f"{len(routing.edges)} edges: {edges}"


class CompareColumn(Widget):
    DEFAULT_CSS = """
    CompareColumn { height: 1fr; width: 1fr; border: round $panel; padding: 0 1; }
    CompareColumn.-focused { border: round $accent; }
    """

    def __init__(self, method: str, row: CompareRow, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.method = method
        self.row = row
        self.model = RunModel()
        self.model.embeddings_ready = True
        self.latest_agent = ""
        self.changes = 0  # grows with every event applied
        self._drawn: tuple[object, ...] = ()
        self.border_title = method

    def apply(self, event: ev.Event) -> None:
        self.model.apply(event)
        SPOKE.dispatch(self, event)
        self.changes += 1

    def _spoke(self, event: ev.AgentStarted | ev.AgentDelta | ev.AgentFinished) -> None:
        self.latest_agent = event.agent

    def tick(self) -> None:
        """Redraw when something changed since the last draw: an event, or its row's verdict and answer, which
        the comparison sets after the method's last event."""
        row = self.row
        drawn = (self.changes, row.verdict, row.answer, row.state, row.paused_s)
        if drawn != self._drawn:
            self._drawn = drawn
            self.refresh()

    def status_line(self) -> Text:
        m, row = self.model, self.row
        where = m.position if m.current else ""
        phase = m.phase if m.running and m.phase else ""
        state: str = row.state
        if m.running and m.control_status and m.control_status not in ("running", "starting"):
            state = m.control_status  # paused / stepping
        text = Text()
        text.append(" · ".join(p for p in (where, phase) if p) or "starting", style="bold")
        text.append("  ")
        text.append(state, style=STATE_STYLE.get(row.state, ""))
        return text

    def render(self) -> Text:
        m, row = self.model, self.row
        out = Text(no_wrap=False, overflow="fold")
        out.append_text(self.status_line())
        played = m.run.demo_played if m.run is not None else ""
        if played:  # never let a demo's answer read as the answer to the user's problem
            verb = "played" if m.finished is not None else "plays"  # not "played" before it has played anything
            out.append(f"\nDEMO: it {verb} its own problem, not yours", style="bold yellow")
        paused = f" (+{row.paused_s:.1f} s paused)" if row.paused_s >= 0.05 else ""  # wall_s is its working time
        # The user's steering actions taken (and refused), where there were any: a steered fork says so.
        steered = f" · ✎ {row.steered} steered" if row.steered else ""
        steered += f" ({row.steer_refused} refused)" if row.steer_refused else ""
        out.append(f"\ncalls {row.calls} · {row.prompt_tokens:,} p + {row.completion_tokens:,} c tok · "
                   f"{row.wall_s:.1f} s{paused}{steered}\n", style="")
        out.append("topology: ", style="dim")
        out.append(topology_line(m, self.method) + "\n")
        if row.state == RowState.FAILED:
            out.append("\nfailed: ", style="bold red")
            out.append(row.reason or "the run stopped")
            out.append("\n")
        done = m.finished is not None or row.state in (RowState.DONE, RowState.CANCELLED)
        if done:  # its answer and verdict first; the latest message under them where there is room
            self._answer(out)
            latest = self._latest()
            if latest is not None and self._rows_left(out) >= 4 + len(latest.wrap(self.app.console, self._width)):
                out.append("\n")
                out.append_text(latest)
        else:
            latest = self._latest()
            if latest is not None:
                out.append_text(latest)
        return out

    @property
    def _width(self) -> int:
        return max(10, self.content_region.width or 40)

    def _latest(self) -> Text | None:
        """The latest agent's last lines, under its name."""
        if not self.latest_agent:
            return None
        rv = self.model.round_view()
        agent = rv.agents.get(self.latest_agent) if rv is not None else None
        body = (agent.text or agent.public or agent.error) if agent is not None else ""
        lines = [line for line in body.splitlines() if line.strip()][-LATEST_LINES:]
        text = Text(f"\n── {self.latest_agent}\n", style="bold")
        text.append("\n".join(lines) + "\n", style="")
        return text

    def _answer(self, out: Text) -> None:
        m, row = self.model, self.row
        out.append("\n── answer", style="bold")
        out.append(f" ({m.finished.answer_source or 'none'})\n" if m.finished is not None else "\n", style="dim")
        # The verdict first: a short column cuts what comes last, and the verdict is what a glance is for.
        out.append("verdict: ", style="dim")
        out.append(row.verdict, style="green" if row.verdict in ("tests passed", "matches expected", "passed")
                   or row.verdict.startswith("passed") else "")
        out.append("\n")
        answer = row.answer.strip()
        if not answer:
            out.append("no answer", style="italic yellow")
            return
        room = max(1, self._rows_left(out) - 1)  # one row for the marker
        lines = Text(answer).wrap(self.app.console, self._width)
        out.append_text(Text("\n").join(lines[:room]) if len(lines) > room else Text(answer))
        if len(lines) > room:  # never a cut answer that reads as the whole of it
            out.append(f"\n… {len(lines) - room} more lines (enter: the full run)", style="italic dim")

    def _rows_left(self, text: Text) -> int:
        """Rows of the column still free under ``text`` as it wraps now (many when the size is not known yet)."""
        height, width = self.content_region.height, self.content_region.width
        if not height or not width:
            return 1_000
        return height - len(text.wrap(self.app.console, width))


SPOKE.on(ev.AgentStarted)(CompareColumn._spoke)
SPOKE.on(ev.AgentDelta)(CompareColumn._spoke)
SPOKE.on(ev.AgentFinished)(CompareColumn._spoke)
