"""Pure drawings of one round's routing: the layered graph and the similarity matrix.

(RoutingResult, width, options) -> list of Rich Text lines, no Textual. The graph is drawn in layers:
one row per tier (tiers run in order, a tier's agents together; nodes numbered in that order), then
every kept edge as ``src ─0.77─▶ dst`` in delivery order, removed edges dimmed with their reason on
request, and a one-line legend of the symbols. A graph whose agents all run at once (the single-pass
protocol) has no tier rows: one row in delivery order. Compared with a baseline (a PREVIEW or a
HYPOTHETICAL against the round's own graph) added edges are marked ``+`` and the baseline's edges
that would go are listed struck through with the reason. Edge lines flow into columns when a height
is given and the pane is wide enough.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from core.routing.dytopo import KIND_FIXED, KIND_PINNED, KIND_ROUTED, Edge, RemovalReason, RoutingResult, edge_glyphs
from core.routing.layout import legend, run_order


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
    added: str = "bold"  # an edge the baseline does not have
    dropped: str = "dim strike"  # a baseline edge this graph does not have
    steered: str = "bold underline"  # an edge the user pinned or cut (core.runtime.steering)


@dataclass(frozen=True)
class GraphOptions:
    show_removed: bool = False
    height: int | None = None  # rows available; edge lines flow into columns beyond it
    tag: str = ""  # "PREVIEW" / "HYPOTHETICAL" / "" — shown first on the legend line
    active: frozenset[str] = frozenset()
    styles: GraphStyles = field(default_factory=GraphStyles)
    tiered: bool = True  # False: every agent runs at once (single-pass), tiers mean nothing
    baseline: RoutingResult | None = None  # the round's own graph, when this one is a preview / what-if


def is_tiered(routing: RoutingResult, options: GraphOptions) -> bool:
    return options.tiered and bool(routing.tiers)


def diff(baseline: RoutingResult, routing: RoutingResult) -> tuple[set[tuple[str, str]], list[Edge]]:
    """(keys of the edges ``routing`` adds to ``baseline``, the baseline's edges it drops)."""
    old = {(e.src, e.dst): e for e in baseline.edges}
    new = {(e.src, e.dst) for e in routing.edges}
    return new - old.keys(), [old[k] for k in sorted(old.keys() - new)]


def drop_reason(routing: RoutingResult, edge: Edge) -> str:
    """Why ``routing`` does not keep an edge the baseline kept."""
    for r in routing.removed:
        if (r.src, r.dst) == (edge.src, edge.dst):
            return r.reason
    if not routing.typed and edge.score < routing.tau:
        return f"below tau {routing.tau:.2f}"
    return "not kept"


def symbols(routing: RoutingResult, options: GraphOptions) -> str:
    """The one-line legend of what the drawing's symbols mean."""
    tiered = is_tiered(routing, options)
    parts = ["[n X] runs n-th · Tn tier" if tiered else "[X] all work at once"]
    kinds = [k for k in routing.kinds if k not in (KIND_ROUTED, KIND_FIXED)] if routing.typed else []
    if kinds:
        parts += [f"{edge_glyphs(k)[1]} {k}" for k in kinds]
    else:
        parts.append("A─s─▶B: B hears A" + ("" if tiered else " next round") + ", score s")
    if options.show_removed and routing.removed:
        parts.append("┄▷ removed")
    return " · ".join(parts)


def steer_legend(routing: RoutingResult, width: int, options: GraphOptions) -> list[Text]:
    """The user's pins and cuts in one (wrapped) line, always shown: ``━▶ pinned by you: A→B · ✂ cut by
    you: C→D``; nothing when the user pinned and cut nothing."""
    pins = routing.pinned_pairs  # a property that builds its set: once, not per edge
    pinned = [(e.src, e.dst) for e in routing.edges if (e.src, e.dst) in pins]  # delivery order
    cut = sorted(routing.cut_pairs)
    parts = []
    if pinned:
        named = ", ".join(f"{src}→{dst}" for src, dst in pinned)
        parts.append(f"{edge_glyphs(KIND_PINNED)[1]} pinned by you: {named}")
    if cut:
        parts.append("✂ cut by you: " + ", ".join(f"{src}→{dst}" for src, dst in cut))
    return _wrapped(" · ".join(parts), width, options.styles.steered) if parts else []


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


def _wrapped(text: str, width: int, style: str) -> list[Text]:
    """A " · "-separated line wrapped at its separators."""
    lines = [Text()]
    for i, part in enumerate(text.split(" · ")):
        sep = " · " if i and lines[-1].cell_len else ""
        if lines[-1].cell_len and lines[-1].cell_len + len(sep) + len(part) > width:
            lines.append(Text())
            sep = ""
        lines[-1].append(sep + part, style)
    return lines


def _order_row(routing: RoutingResult, width: int, options: GraphOptions) -> list[Text]:
    """Single pass: every agent at once, one row (in delivery order), no numbers, no tiers."""
    st = options.styles
    label = "all │ "
    rows = [Text(label, st.tier)]
    for name in run_order(routing, tiered=False):
        box = f"[{name}]"
        if rows[-1].cell_len + len(box) > width and rows[-1].cell_len > len(label):
            rows.append(Text(" " * (len(label) - 2) + "│ ", st.tier))
        style = f"{st.node} {st.active}" if name in options.active else st.node
        rows[-1].append(box, style)
        rows[-1].append(" ")
    return rows


def _tier_rows(routing: RoutingResult, width: int, options: GraphOptions) -> list[Text]:
    if not is_tiered(routing, options):
        return _order_row(routing, width, options)
    st = options.styles
    position = {name: i + 1 for i, name in enumerate(run_order(routing))}
    label_width = len(f"T{len(routing.tiers) - 1}") + 1
    rows: list[Text] = []
    for index, tier in enumerate(routing.tiers):
        line = Text(f"T{index}".ljust(label_width), st.tier)
        line.append("│ ", st.tier)
        used = label_width + 2
        for name in tier:
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
    position = {name: i for i, name in enumerate(run_order(routing, is_tiered(routing, options)))}
    kept = sorted(routing.edges, key=lambda e: (position.get(e.dst, 0), -e.score, e.src))
    lines: list[Text] = []
    typed = routing.typed
    added: set[tuple[str, str]] = set()
    dropped: list[Edge] = []
    if options.baseline is not None:
        added, dropped = diff(options.baseline, routing)
    for e in kept:
        left, right = edge_glyphs(e.kind)
        line = Text()
        if options.baseline is not None:
            line.append("+ " if (e.src, e.dst) in added else "  ", st.added)
        line.append(e.src.rjust(pad), st.node)
        line.append(f" {left}", st.edge)
        line.append(f"{e.score:.2f}", st.score)
        line.append(f"{right} ", st.edge)
        line.append(e.dst, st.node)
        if typed:
            line.append(f"  {e.kind}", st.legend)
        elif e.kind == KIND_PINNED:
            line.append("  pinned", st.steered)
        if (e.src, e.dst) in added:
            line.stylize(st.added, 2)
        lines.append(line)
    for e in sorted(dropped, key=lambda e: (position.get(e.dst, 0), -e.score, e.src)):
        line = Text("− ", st.removed)
        line.append(f"{e.src.rjust(pad)} ┄{e.score:.2f}┄▷ {e.dst}", st.dropped)
        line.append(f"  ({drop_reason(routing, e)})", st.removed)
        lines.append(line)
    if options.show_removed:
        listed = {(e.src, e.dst) for e in dropped}
        indent = "  " if options.baseline is not None else ""
        for r in sorted(routing.removed, key=lambda r: (r.reason, position.get(r.dst, 0), -r.score, r.src)):
            if (r.src, r.dst) in listed:
                continue
            kind = f"{r.kind}, " if typed else ""
            style = st.steered if r.reason == RemovalReason.CUT else st.removed
            lines.append(Text(f"{indent}{r.src.rjust(pad)} ┄{r.score:.2f}┄▷ {r.dst}  ({kind}{r.reason})", style))
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
    """The layered drawing: legend, tiers with numbered nodes (or one row when every agent runs at
    once), then the edges with their scores, then what the symbols mean."""
    options = options or GraphOptions()
    lines = _legend_lines(routing, width, options)
    if options.baseline is not None:
        added, dropped = diff(options.baseline, routing)
        base = options.baseline
        values = "" if base.typed else f" (tau {base.tau:.2f}, k_in {base.k_in})"
        lines += _wrapped(f"vs the round's graph{values}: +{len(added)} new, −{len(dropped)} dropped",
                          width, options.styles.legend)
    lines += steer_legend(routing, width, options)
    lines += _tier_rows(routing, width, options)
    edges = _edge_lines(routing, options)
    if not routing.edges:
        empty = "no edges: every agent works alone" if routing.typed else "no edge reaches tau: every agent works alone"
        edges.insert(0, Text(empty, options.styles.removed))
    lines.append(Text("─" * min(width, 40), options.styles.tier))
    footer: list[Text] = []
    listed = {(e.src, e.dst) for e in diff(options.baseline, routing)[1]} if options.baseline else set()
    # Every edge d would list (cut ones too, though the steering line names them): the count matches d's list.
    hidden = sum(1 for r in routing.removed if (r.src, r.dst) not in listed)
    if not options.show_removed and hidden > 0:
        footer.append(Text(f"{hidden} removed edge(s) hidden (d shows them)", options.styles.removed))
    footer += _wrapped(symbols(routing, options), width, options.styles.removed)
    rows_left = (options.height - len(lines) - len(footer)) if options.height else 0
    lines += _flow(edges, width, rows_left)
    return lines + footer


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
    if 4 + n * 6 > width:  # the numbers do not fit (a large team, a narrow pane): a map of the matrix
        return _heat_map(routing, width, options)
    longest = max((len(x) for x in names), default=4)
    name_width = max(4, min(longest, width - n * 6 - 1, 12))
    cell = max(6, min(longest + 1, (width - name_width) // max(1, n)))
    kept = {(e.src, e.dst) for e in routing.edges}
    pins, cuts = routing.pinned_pairs, routing.cut_pairs
    lines = _legend_lines(routing, width, options)
    marks = " · + pinned by you" * bool(pins) + " · x cut by you" * bool(cuts)
    lines += _wrapped(f"rows: query (needs) · columns: key (offers) · ≥ {routing.tau:.2f} highlighted · * kept{marks}",
                      width, st.legend)
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
            mark = "+" if (src, dst) in pins else "x" if (src, dst) in cuts else "*" if (src, dst) in kept else " "
            text = f"{score:.2f}{mark}".rjust(cell)
            if (src, dst) in pins or (src, dst) in cuts:
                row.append(text, st.steered)
            elif score >= routing.tau:
                row.append(" ")
                row.append(text[1:], st.hit)
            else:
                row.append(text, st.removed)
        lines.append(row)
    return lines


_SHADES = " ░▒▓"  # below tau: the closer a score comes to the strongest in the matrix, the darker


def _heat_map(routing: RoutingResult, width: int, options: GraphOptions) -> list[Text]:
    """The similarity matrix in two cells per agent: rows are numbered agents (query), columns the same
    numbers (key); ● a kept edge, ○ a score at or above tau that k_in or a cycle dropped, and below tau a
    shade for how close the score comes. The exact scores stay in the inbox and the exports."""
    st = options.styles
    names = routing.names
    n = len(names)
    kept = {(e.src, e.dst) for e in routing.edges}
    pins, cuts = routing.pinned_pairs, routing.cut_pairs
    digits = len(str(n))
    longest = max((len(x) for x in names), default=4)
    label = max(digits + 1, min(width - 2 * n - 1, digits + 2 + longest))
    scores = [routing.similarity[i][j] for i in range(n) for j in range(n) if i != j]
    low, high = (min(scores), max(scores)) if scores else (0.0, 1.0)
    lines = _legend_lines(routing, width, options)
    marks = " · ✚ pinned by you" * bool(pins) + " · ✕ cut by you" * bool(cuts)
    lines += _wrapped(f"rows: query · columns: key, by number · ● kept · ○ ≥ {routing.tau:.2f} dropped · "
                      f"░▒▓ below, darker = closer{marks}", width, st.legend)
    for place in range(digits - 1, -1, -1):  # column numbers written downwards, one digit per line
        header = Text(" " * label, st.tier)
        for j in range(n):
            number = str(j + 1).rjust(digits)
            header.append(f" {number[digits - 1 - place]}", st.tier)
        lines.append(header)
    for i, dst in enumerate(names):
        row = Text(_abbrev(f"{i + 1:>{digits}} {dst}", label).ljust(label), st.node)
        for j, src in enumerate(names):
            score = routing.similarity[i][j]
            if i == j:
                row.append(" ·", st.tier)
            elif (src, dst) in pins:
                row.append(" ✚", st.steered)
            elif (src, dst) in cuts:
                row.append(" ✕", st.steered)
            elif (src, dst) in kept:
                row.append(" ●", st.hit)
            elif score >= routing.tau:
                row.append(" ○", st.score)
            else:
                level = (score - low) / (high - low) if high > low else 0.0
                row.append(" " + _SHADES[min(len(_SHADES) - 1, max(0, int(level * len(_SHADES))))], st.removed)
        lines.append(row)
    return lines


def plain(lines: list[Text]) -> str:
    return "\n".join(line.plain.rstrip() for line in lines)
