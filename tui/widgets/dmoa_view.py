"""DMoA's router view, shown in place of the graph and manager panes when the run's strategy is dmoa.

Per step (the viewed round): one bar per pool agent for p = softmax(z_i / tau) with the 1/N line, k_i
and K, the selected agents highlighted with their alpha; how far the context vector moved; the hand-off
from the previous step's agents (weighted by their alpha); the Summarizer's tag and text; on dense
(training / TTT) steps each agent's predictive entropy, its confidence and the ranking loss. Below, the
step timeline ("step 1: Designer, Researcher / step 2: Tester, Developer ...").

``render_dmoa`` is pure (records in, Rich Text lines out); the widget only reads the RunModel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.widgets import Static

from core.methods.dmoa.events import DmoaRouted, StepRecord, steps_from_events

from ..model import RunModel
from .drawing_pane import DrawingPane
from .method_views import MethodView, register_view

if TYPE_CHECKING:
    from .graph_pane import GraphPane

TITLE = "DMoA router"


@dataclass(frozen=True)
class DmoaStyles:
    title: str = "bold"
    name: str = ""
    chosen: str = "bold"
    bar: str = "dim"
    bar_chosen: str = "bold"
    line: str = "bold"  # the 1/N threshold
    muted: str = "dim"
    final: str = "bold"
    cont: str = "bold"
    viewed: str = "reverse"


def _bar(p: float, threshold: float, width: int, chosen: bool, st: DmoaStyles) -> Text:
    """A bar of ``width`` cells for probability p (full width = 1.0), with the 1/N threshold marked."""
    filled = p * width
    mark = min(width - 1, max(0, round(threshold * width)))
    text = Text()
    for cell in range(width):
        if cell == mark:
            text.append("┃" if cell < filled else "┆", st.line)
        elif cell < int(filled):
            text.append("█", st.bar_chosen if chosen else st.bar)
        elif cell < filled:  # the partial last cell
            eighths = " ▏▎▍▌▋▊▉"[min(7, int((filled - cell) * 8))]
            text.append(eighths, st.bar_chosen if chosen else st.bar)
        else:
            text.append(" ")
    return text


def router_lines(r: DmoaRouted, width: int, st: DmoaStyles) -> list[Text]:
    pad = max((len(n) for n in r.names), default=4)
    bar_width = max(8, min(40, width - pad - 26))
    alpha = dict(zip(r.selected, r.alpha, strict=False))
    head = Text()
    head.append(f"k {r.k} of K {r.k_max}", st.title)
    scale = "the Selector's weights" if r.router == "llm" else f"softmax(z/τ), τ {r.tau:g}"
    head.append(f" · {scale} · 1/N = {r.threshold:.2f} ", st.muted)
    head.append("┆", st.line)
    if r.dense:
        head.append(" · dense: every agent ran", st.cont)
    lines = [head]
    for name, p, z in zip(r.names, r.probs, r.logits, strict=False):
        chosen = name in alpha
        line = Text("▶ " if chosen else "  ", st.chosen if chosen else st.muted)
        line.append(name.ljust(pad), st.chosen if chosen else st.name)
        line.append(" ")
        line.append_text(_bar(p, r.threshold, bar_width, chosen, st))
        line.append(f" {p:.2f}", st.chosen if chosen else st.muted)
        if r.router != "llm":
            line.append(f"  z {z:+.2f}", st.muted)
        if chosen:
            line.append(f"  α {alpha[name]:.2f}", st.chosen)
        lines.append(line)
    if r.context_shift is not None:
        lines.append(Text(f"context moved: cos(X_{r.round}, X_{r.round - 1}) = {r.context_shift:.2f}", st.muted))
    if r.note:
        lines.append(Text(f"router: {r.note}", st.muted))
    return lines


def handoff_line(record: StepRecord, st: DmoaStyles) -> Text:
    line = Text("hand-off  ", st.title)
    if record.routed is None:
        return line
    if not record.previous:
        line.append("step 1 starts from the problem alone (X_1 = MiniLM(problem))", st.muted)
        return line
    senders = ", ".join(f"{n} (α {a:.2f})" for n, a in zip(record.previous, record.previous_alpha, strict=False))
    line.append(senders, st.name)
    line.append(" ──▶ ", st.line)
    line.append(", ".join(record.routed.selected), st.chosen)
    return line


def summary_lines(record: StepRecord, width: int, st: DmoaStyles) -> list[Text]:
    done = record.done
    if done is None:
        return [Text("summarizer: waiting for this step's responses", st.muted)]
    line = Text("summarizer ")
    line.append(f"[{done.tag}]", st.final if done.tag == "FINAL" else st.cont)
    prose, _, code = done.text.partition("```")
    body = " ".join(prose.split())
    for tag in ("[FINAL]", "[CONTINUE]"):
        body = body.removeprefix(tag).strip()
    limit = max(40, width * 2 - 20)
    line.append(" " + (body if len(body) <= limit else body[: limit - 1] + "…"))
    if code:
        line.append("  (the answer holds code: see the result pane)", st.muted)
    lines = [line]
    if done.note:
        lines.append(Text(f"  ({done.note})", st.muted))
    if done.entropy:
        pe = Text(f"entropy (top-{done.top_logprobs} logprobs, renormalised): ", st.title)
        pe.append(" · ".join(f"{n} {v:.3f}" for n, v in done.entropy.items()))
        lines.append(pe)
        conf = Text("confidence C = softmax(-E): ", st.muted)
        conf.append(" · ".join(f"{n} {v:.2f}" for n, v in done.confidence.items()), st.muted)
        lines.append(conf)
        if done.rank_loss is not None:
            lines.append(Text(f"ranking loss (eq. 14) this step: {done.rank_loss:.4f}", st.title))
    return lines


def timeline_lines(steps: dict[int, StepRecord], viewed: int, width: int, st: DmoaStyles) -> list[Text]:
    """``step 1: A, B / step 2: C …``, wrapped at the separators; the viewed step highlighted, each
    step's Summarizer tag marked (✓ FINAL, … CONTINUE)."""
    lines = [Text()]
    for number in sorted(steps):
        record = steps[number]
        who = ", ".join(record.routed.selected) if record.routed is not None else "…"
        mark = "" if record.done is None else (" ✓" if record.done.tag == "FINAL" else " …")
        piece = Text(f"step {number}: ", st.viewed if number == viewed else st.muted)
        piece.append(who, st.viewed if number == viewed else st.name)
        piece.append(mark, st.final if mark == " ✓" else st.muted)
        sep = " / " if lines[-1].cell_len else ""
        if lines[-1].cell_len and lines[-1].cell_len + len(sep) + piece.cell_len > width:
            lines.append(Text())
            sep = ""
        lines[-1].append(sep, st.muted)
        lines[-1].append_text(piece)
    return lines


def render_dmoa(steps: dict[int, StepRecord], viewed: int, width: int, styles: DmoaStyles | None = None,
                waiting: str = "") -> list[Text]:
    """The whole view for step ``viewed`` (0: the latest)."""
    st = styles or DmoaStyles()
    if not steps:
        return [Text(waiting or "waiting for step 1's routing", "italic")]
    viewed = viewed if viewed in steps else max(steps)
    record = steps[viewed]
    lines = timeline_lines(steps, viewed, width, st)
    lines.append(Text("─" * min(width, 40), st.muted))
    if record.routed is not None:
        lines.append(Text(f"step {viewed} · router {record.routed.router}", st.title))
        lines += router_lines(record.routed, width, st)
    else:
        lines.append(Text(f"step {viewed}: routing…", "italic"))
    lines.append(handoff_line(record, st))
    lines += summary_lines(record, width, st)
    return lines


@register_view("dmoa")
class DmoaView(DrawingPane, MethodView):
    """The router view; its data comes only from the RunModel (live and replay alike)."""

    hides_manager = True  # no Manager decides: the Summarizer's tag is in the view
    screen_class = "-dmoa"

    SCOPED_CSS = False
    DEFAULT_CSS = """
    DmoaView { width: 8fr; display: none; }
    SwarmScreen.-dmoa DmoaView { display: block; }
    SwarmScreen.-dmoa #graph, SwarmScreen.-dmoa #manager { display: none; }
    SwarmScreen.-narrow DmoaView { width: 1fr; height: 24; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(TITLE, "dmoa-body", id=id)

    def _styles(self) -> DmoaStyles:
        accent, primary = self._color("accent", "yellow"), self._color("primary", "blue")
        muted = self._color("text-muted", "grey50")
        return DmoaStyles(
            title=f"bold {self._color('foreground', 'white')}",
            chosen=f"bold {accent}",
            bar=muted,
            bar_chosen=accent,
            line=f"bold {self._color('warning', 'yellow')}",
            muted=muted,
            final=f"bold {self._color('success', 'green')}",
            cont=f"bold {primary}",
            viewed=f"bold {accent}",
        )

    def sync_view(self, model: RunModel, round_no: int, *, active: frozenset[str], graph: GraphPane,
                  state: Any = None) -> None:
        self.sync(model, round_no)

    def sync(self, model: RunModel, round_no: int) -> None:
        width = max(30, self.scrollable_content_region.width)
        key = (id(model), model.rev, len(model.method_events), round_no, width, self.app.theme)
        if key == self._key:
            return
        self._key = key
        steps = steps_from_events(model.method_events)
        self.border_title = f"{TITLE} · step {round_no}" if round_no else TITLE
        waiting = "no steps: the run stopped before step 1" if model.error else ""
        self._lines = render_dmoa(steps, round_no, width, self._styles(), waiting)
        self.query_one("#dmoa-body", Static).update(Text("\n").join(self._lines))
