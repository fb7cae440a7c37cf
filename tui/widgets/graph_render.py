"""Pure drawings of one round's routing: the layered graph and the similarity matrix.

(RoutingResult, width, options) -> list of Rich Text lines, no Textual. The graph is drawn in layers:
one row per tier (the execution order, numbered), then every kept edge as ``src ─0.77─▶ dst`` in
delivery order, removed edges dimmed with their reason on request, and a one-line legend. Edge lines
flow into columns when a height is given and the pane is wide enough.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from core.routing.dytopo import RoutingResult, edge_glyphs


@dataclass(frozen=True)
class GraphStyles:
    node: str = "bold"
    tier: str = "dim"
    edge: str = ""
    score: str = "bold"
    removed: str = "dim"
    legend: str = "italic"
    tag: str = "bold reverse"
    hit: str = "bold reverse"  # matrix cell at or above tau
    active: str = "bold underline"  # node currently working


@dataclass(frozen=True)
class GraphOptions:
    show_removed: bool = False
    height: int | None = None  # rows available; edge lines flow into columns beyond it
    tag: str = ""  # "PREVIEW" / "HYPOTHETICAL" / "" — shown first on the legend line
    active: frozenset[str] = frozenset()
    styles: GraphStyles = field(default_factory=GraphStyles)


def legend(routing: RoutingResult, tag: str = "") -> str:
    """One line: tau, k_in (or the edge kinds of a typed graph), edges kept of possible, what was removed."""
    reasons = sorted({r.reason for r in routing.removed}, key=lambda r: (r not in ("k_in", "cycle"), r))
    removed = {reason: sum(1 for r in routing.removed if r.reason == reason) for reason in reasons}
    if routing.typed:
        kinds = ", ".join(f"{n} {kind}" for kind, n in routing.kinds.items()) or "no edges"
        parts = [kinds, f"{len(routing.edges)}/{routing.possible_edges} edges kept"]
        if routing.inactive:
            parts.append(f"{len(routing.inactive)} not running")
    else:
        parts = [
            f"tau {routing.tau:.2f}",
            f"k_in {routing.k_in}",
            f"{len(routing.edges)}/{routing.possible_edges} edges kept",
        ]
    cut = [f"{count} by {reason}" for reason, count in removed.items() if count]
    if cut:
        parts.append("removed " + ", ".join(cut))
    if not routing.acyclic:
        parts.append("cycles kept")
    text = " · ".join(parts)
    return f"{tag} · {text}" if tag else text


def _legend_lines(routing: RoutingResult, width: int, options: GraphOptions) -> list[Text]:
    """The legend, wrapped at its " · " separators when the pane is narrow."""
    lines = [Text()]
    if options.tag:
        lines[0].append(f" {options.tag} ", options.styles.tag)
        lines[0].append(" ")
    for i, part in enumerate(legend(routing).split(" · ")):
        sep = " · " if i and lines[-1].cell_len else ""
        if lines[-1].cell_len and lines[-1].cell_len + len(sep) + len(part) > width:
            lines.append(Text())
            sep = ""
        lines[-1].append(sep + part, options.styles.legend)
    return lines


def _tier_rows(routing: RoutingResult, width: int, options: GraphOptions) -> list[Text]:
    st = options.styles
    position = {name: i + 1 for i, name in enumerate(routing.order)}
    label_width = len(f"T{len(routing.tiers) - 1}") + 1
    rows: list[Text] = []
    for index, tier in enumerate(routing.tiers):
        line = Text(f"T{index}".ljust(label_width), st.tier)
        line.append("│ ", st.tier)
        used = label_width + 2
        for name in sorted(tier, key=lambda n: position.get(n, 0)):
            box = f"[{position.get(name, '?')} {name}]"
            if used + len(box) > width and used > label_width + 2:
                rows.append(line)
                line = Text(" " * label_width, st.tier)
                line.append("│ ", st.tier)
                used = label_width + 2
            style = f"{st.node} {st.active}" if name in options.active else st.node
            line.append(box, style)
            line.append(" ")
            used += len(box) + 1
        rows.append(line)
    return rows


COMPACT_AT = 12  # agents from which edges are drawn one line per receiver, not one line per edge


def _compact_edge_lines(routing: RoutingResult, options: GraphOptions) -> list[Text]:
    """Large teams: one line per receiver (``dst ◁ src .62, src .55``), removed edges counted by reason."""
    st = options.styles
    position = {name: i for i, name in enumerate(routing.order)}
    inbound: dict[str, list[Any]] = {}
    for e in sorted(routing.edges, key=lambda e: (-e.score, e.src)):
        inbound.setdefault(e.dst, []).append(e)
    pad = max((len(n) for n in inbound), default=0)
    lines: list[Text] = []
    for dst in sorted(inbound, key=lambda n: position.get(n, 0)):
        line = Text(dst.rjust(pad), st.node)
        line.append(" ◁ ", st.edge)
        for i, e in enumerate(inbound[dst]):
            if i:
                line.append(", ", st.edge)
            line.append(e.src, st.node)
            line.append(f" {e.score:.2f}", st.score)
            if routing.typed:
                line.append(f" {e.kind}", st.legend)
        lines.append(line)
    if options.show_removed and routing.removed:
        reasons: dict[str, int] = {}
        for r in routing.removed:
            reasons[r.reason] = reasons.get(r.reason, 0) + 1
        counts = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
        lines.append(Text(f"removed: {counts} (the matrix view shows each score)", st.removed))
    if routing.inactive:
        lines.append(Text(f"not running: {', '.join(routing.inactive)}", st.removed))
    return lines


def _edge_lines(routing: RoutingResult, options: GraphOptions) -> list[Text]:
    st = options.styles
    names = routing.names
    if len(names) >= COMPACT_AT:
        return _compact_edge_lines(routing, options)
    pad = max((len(n) for n in names), default=0)
    position = {name: i for i, name in enumerate(routing.order)}
    kept = sorted(routing.edges, key=lambda e: (position.get(e.dst, 0), -e.score, e.src))
    lines: list[Text] = []
    typed = routing.typed
    for e in kept:
        left, right = edge_glyphs(e.kind)
        line = Text(e.src.rjust(pad), st.node)
        line.append(f" {left}", st.edge)
        line.append(f"{e.score:.2f}", st.score)
        line.append(f"{right} ", st.edge)
        line.append(e.dst, st.node)
        if typed:
            line.append(f"  {e.kind}", st.legend)
        lines.append(line)
    if options.show_removed:
        for r in sorted(routing.removed, key=lambda r: (r.reason, position.get(r.dst, 0), -r.score, r.src)):
            kind = f"{r.kind}, " if typed else ""
            lines.append(Text(f"{r.src.rjust(pad)} ┄{r.score:.2f}┄▷ {r.dst}  ({kind}{r.reason})", st.removed))
    if routing.inactive:
        lines.append(Text(f"not running: {', '.join(routing.inactive)}", st.removed))
    return lines


def _flow(lines: list[Text], width: int, rows: int) -> list[Text]:
    """Put lines side by side in columns when they do not fit in ``rows`` and the width allows it."""
    if rows <= 0 or len(lines) <= rows:
        return lines
    col_width = max(line.cell_len for line in lines) + 3
    columns = max(1, min(width // col_width, -(-len(lines) // rows)))
    if columns == 1:
        return lines
    per_column = -(-len(lines) // columns)
    out: list[Text] = []
    for r in range(per_column):
        row = Text()
        for c in range(columns):
            index = c * per_column + r
            if index < len(lines):
                cell = lines[index].copy()
                if c < columns - 1:
                    cell.pad_right(col_width - cell.cell_len)
                row.append_text(cell)
        out.append(row)
    return out


def render_graph(routing: RoutingResult, width: int, options: GraphOptions | None = None) -> list[Text]:
    """The layered drawing: legend, tiers with numbered nodes, then the edges with their scores."""
    options = options or GraphOptions()
    lines = _legend_lines(routing, width, options)
    lines += _tier_rows(routing, width, options)
    edges = _edge_lines(routing, options)
    if not routing.edges:
        empty = "no edges: every agent works alone" if routing.typed else "no edge reaches tau: every agent works alone"
        edges.insert(0, Text(empty, options.styles.removed))
    lines.append(Text("─" * min(width, 40), options.styles.tier))
    rows_left = (options.height - len(lines)) if options.height else 0
    lines += _flow(edges, width, rows_left)
    if routing.removed and not options.show_removed:
        lines.append(Text(f"{len(routing.removed)} removed edge(s) hidden", options.styles.removed))
    return lines


def render_broadcast(names: list[str], width: int, round_no: int = 1, styles: GraphStyles | None = None) -> list[Text]:
    """Round 1 has no routing: every worker's output goes to every other worker."""
    st = styles or GraphStyles()
    n = len(names)
    lines = [Text(f"round {round_no} · broadcast · all {n * (n - 1)} edges", st.legend)]
    row = Text()
    for name in names:
        box = f"[{name}]"
        if row.cell_len + len(box) + 1 > width and row.cell_len:
            lines.append(row)
            row = Text()
        row.append(box, st.node)
        row.append(" ")
    lines.append(row)
    lines.append(Text("every worker ⇄ every other worker", st.edge))
    lines.append(Text("routing by descriptors starts in round 2", st.removed))
    return lines


def _abbrev(name: str, size: int) -> str:
    return name if len(name) <= size else name[: size - 1] + "…"


def render_matrix(routing: RoutingResult, width: int, options: GraphOptions | None = None) -> list[Text]:
    """Similarity matrix, rows = query (consumer), columns = key (provider); cells >= tau highlighted,
    kept edges marked with *."""
    options = options or GraphOptions()
    st = options.styles
    if not routing.similarity:
        note = Text("this method's graph has no similarity matrix", st.removed)
        return [*_legend_lines(routing, width, options), note]
    names = routing.names
    n = len(names)
    longest = max((len(x) for x in names), default=4)
    name_width = max(4, min(longest, width - n * 6 - 1, 12))
    cell = max(6, min(longest + 1, (width - name_width) // max(1, n)))
    kept = {(e.src, e.dst) for e in routing.edges}
    lines = _legend_lines(routing, width, options)
    lines.append(Text(f"rows: query (needs) · columns: key (offers) · ≥ {routing.tau:.2f} highlighted · * kept",
                      st.legend))
    header = Text("q \\ k".ljust(name_width), st.tier)
    for name in names:
        header.append(_abbrev(name, cell - 2).rjust(cell - 1) + " ", st.node)
    lines.append(header)
    for i, dst in enumerate(names):
        row = Text(_abbrev(dst, name_width).ljust(name_width), st.node)
        for j, src in enumerate(names):
            if i == j:
                row.append("·".rjust(cell), st.tier)
                continue
            score = routing.similarity[i][j]
            mark = "*" if (src, dst) in kept else " "
            text = f"{score:.2f}{mark}".rjust(cell)
            if score >= routing.tau:
                row.append(" ")
                row.append(text[1:], st.hit)
            else:
                row.append(text, st.removed)
        lines.append(row)
    return lines


def plain(lines: list[Text]) -> str:
    return "\n".join(line.plain.rstrip() for line in lines)
