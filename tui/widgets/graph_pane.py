"""The graph pane: the viewed round's graph (or similarity matrix) drawn by graph_render."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from core.routing.dytopo import RoutingResult
from core.runtime.control import ControlMode

from ..model import RunModel
from .drawing_pane import DrawingPane
from .graph_render import (
    GraphOptions,
    GraphStyles,
    render_broadcast,
    render_graph,
    render_matrix,
)


class GraphPane(DrawingPane):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("graph", "graph-body", id=id)
        self.matrix = False
        self.show_removed = False
        self._shown: tuple[RunModel, int, dict[str, Any]] | None = None  # what sync last drew, for a resize

    def on_resize(self) -> None:
        # Drawn to the width it had: a pane that changed size (the run finished and the layout moved)
        # is drawn again, or its lines would wrap or leave room unused.
        if self._shown is not None:
            model, round_no, extra = self._shown
            self.sync(model, round_no, **extra)

    def _styles(self) -> GraphStyles:
        fg = self._color("foreground", "white")
        return GraphStyles(
            node=f"bold {fg}",
            tier="dim",
            edge=self._color("primary", "blue"),
            score=f"bold {self._color('accent', 'yellow')}",
            removed="dim",
            legend="italic",
            tag=f"bold {self._color('background', 'black')} on {self._color('warning', 'yellow')}",
            hit=f"bold {self._color('background', 'black')} on {self._color('success', 'green')}",
            active=f"underline {self._color('warning', 'yellow')}",
            added=f"bold {self._color('success', 'green')}",
            dropped="dim strike",
            steered=f"bold {self._color('warning', 'yellow')}",
        )

    @staticmethod
    def _next_routing(model: RunModel, routing: RoutingResult | None) -> list[Text]:
        """Under the live round's own graph: the values the next routing will use, when they differ."""
        if routing is None or routing.typed or not model.routes_by_tau or not model.params:
            return []
        tau, k_in = float(model.params["tau"]), int(model.params["k_in"])
        if (tau, k_in) == (routing.tau, routing.k_in):
            return []
        return [Text(f"the next routing uses tau {tau:.2f} · k_in {k_in} (this round keeps its graph)", "italic")]

    @staticmethod
    def _unstated(routing: RoutingResult) -> list[Text]:
        """Why an agent has no routed edge at all: its descriptors were not embedded (a reply that copied the
        reply template states nothing, issue 44), so its similarity row and column are all zero."""
        if routing.typed or len(routing.similarity) < 2:
            return []
        sim = routing.similarity
        linked = {e.src for e in routing.edges} | {e.dst for e in routing.edges} | set(routing.inactive)
        blank = [name for i, name in enumerate(routing.names) if name not in linked
                 and not any(sim[i][j] or sim[j][i] for j in range(len(routing.names)) if j != i)]
        if not blank:
            return []
        who = ", ".join(blank)
        return [Text(f"no routed edges for {who}: the descriptors copied the reply template (nothing to embed)",
                     "italic")]

    def sync(
        self,
        model: RunModel,
        round_no: int,
        *,
        override: RoutingResult | None = None,
        tag: str = "",
        active: frozenset[str] = frozenset(),
    ) -> None:
        """Draw round ``round_no``; ``override`` (a preview or a what-if graph) replaces its routing."""
        self._shown = (model, round_no, {"override": override, "tag": tag, "active": active})
        width = max(20, self.scrollable_content_region.width)
        height = self.scrollable_content_region.height
        rv = model.round_view(round_no)
        routing = rv.routing if rv is not None else None
        baseline = None
        if routing is not None and override is not None:
            routing, baseline = override, routing
        else:
            tag = ""
        key = (model.rev, round_no, routing, model.embeddings_ready, self.matrix, self.show_removed, tag,
               width, height, active, self.app.theme, model.tiered, model.running)
        if key == self._key:
            return
        self._key = key
        view = "similarity" if self.matrix else "graph"
        unit = model.method_info.unit if model.method_info is not None else "round"
        self.border_title = f"{view} · {unit} {round_no}" if round_no else view
        options = GraphOptions(show_removed=self.show_removed, height=height, tag=tag, active=active,
                               styles=self._styles(), tiered=model.tiered, baseline=baseline)
        if routing is not None:
            draw = render_matrix if self.matrix else render_graph
            lines = draw(routing, width, options)
            if len(lines) > height and not self.show_vertical_scrollbar:
                # Taller than the pane: the scrollbar about to appear takes its columns, and lines drawn to
                # the full width would wrap (a matrix's rows broke in two).
                lines = draw(routing, max(20, width - self.styles.scrollbar_size_vertical), options)
            if tag == "PREVIEW" and model.finished is not None:
                lines.append(Text("the run has ended: this is what these values would have built", "italic"))
            elif tag == "PREVIEW":
                lines.append(Text("r re-routes now (before phase C); otherwise it applies at the next routing",
                                  "italic"))
            elif not tag and rv is not None and round_no == model.current and model.running:
                lines += self._next_routing(model, rv.routing)
            if model.routes_by_tau:  # the graph was built from descriptors (not a method's typed plan)
                lines += self._unstated(routing)
        elif not model.routes_by_tau and model.run is not None:
            info = model.method_info
            lines = [Text(f"{model.strategy}: no graph in this {unit}" if rv is not None else
                          f"{model.strategy}: waiting for {unit} 1", "italic")]
            if info is not None:
                lines.append(Text(info.summary, "dim"))
        elif rv is not None and round_no == 1:
            lines = render_broadcast(model.workers, width, 1, options.styles)
            if not model.embeddings_ready and not model.error:
                lines.append(Text("loading embeddings…", "italic"))
        elif rv is None and model.error:  # never "loading…" for good once nothing is coming
            lines = [Text(f"no graph: the run stopped before {unit} 1", "italic")]
        elif not model.embeddings_ready:
            lines = [Text("loading embeddings…", "italic")]
        elif rv is None and model.run is not None:
            step = " (step mode: n runs one phase, a auto-runs)" if model.mode == ControlMode.STEP else ""
            lines = [Text(f"waiting for round 1{step}", "italic")]
        elif rv is None:
            lines = [Text("waiting for the run to start", "italic")]
        elif model.finished is not None and round_no == model.current:
            lines = [Text(f"round {round_no}: no graph, the run ended before routing", "italic")]
        else:
            lines = [Text(f"round {round_no}: waiting for descriptors (phase A), then routing", "italic")]
        if rv is not None and routing is None and model.routes_by_tau:
            params = model.params if round_no == model.current else rv.params  # that round's values
            if params:
                lines.append(Text(f"tau {float(params['tau']):.2f} · k_in {params['k_in']}", "italic"))
        self._lines = lines
        self.query_one("#graph-body", Static).update(Text("\n").join(lines))
