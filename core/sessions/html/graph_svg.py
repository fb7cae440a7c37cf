"""A round's graph as inline SVG, laid out as the terminal draws it (core.routing.layout): one row per tier
from the top, nodes numbered in the order they run, every kept edge an arrow with its score; pinned edges
thick, edges the user cut in red, edges k_in, cycle breaking or a method removed dashed (shown on request).

Every edge is a ``<g class="edge">`` carrying ``data-src``, ``data-dst``, ``data-kind`` and ``data-score``, a
removed one a ``<g class="edge-removed">`` with ``data-reason``: what a reader (or a test) can check the
drawing against. Names are model-chosen text for some methods: they are escaped like everything else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.routing.dytopo import (
    KIND_CONDITIONED,
    KIND_CROSS,
    KIND_DEBATE,
    KIND_FEEDBACK,
    KIND_HANDOFF,
    KIND_PINNED,
    Edge,
    RemovalReason,
    RemovedEdge,
    RoutingResult,
    edge_label,
)
from core.routing.layout import rows, run_order
from core.sessions.html.page import esc

NODE_H = 26
ROW_GAP = 92  # from one row's top to the next's: room for the curves and their scores
COL_GAP = 56  # room for a self-loop and its score on a node's left
LEFT = 40  # the tier labels' column
PAD = 34  # room for scores written beside the outermost nodes
TOP = 48  # room for arcs between nodes of the first row
PER_LINE = 6  # a tier wider than this wraps onto more lines, as the terminal wraps a long tier
CHAR_W = 7.0  # a 12px sans-serif character, roughly: box widths follow the labels


@dataclass(frozen=True)
class Box:
    name: str
    label: str
    x: float
    y: float
    w: float
    line: int
    inactive: bool

    @property
    def cx(self) -> float:
        return self.x + self.w / 2


def _short(name: str, limit: int = 26) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _layout(routing: RoutingResult, tiered: bool) -> tuple[dict[str, Box], list[tuple[int, float]], float, float]:
    """(boxes by name, (tier index, y) of each tier's first line, width, height)."""
    numbered = tiered and bool(routing.tiers)
    position = {name: i + 1 for i, name in enumerate(run_order(routing, tiered))}
    inactive = set(routing.inactive)
    lines: list[tuple[int, list[str]]] = []  # (tier index, names on this visual line)
    for index, row in enumerate(rows(routing, tiered)):
        for start in range(0, max(1, len(row)), PER_LINE):
            lines.append((index, row[start:start + PER_LINE]))
    widths: list[list[float]] = []
    labels: list[list[str]] = []
    for _, names in lines:
        texts = [(f"{position.get(n, '?')} {_short(n)}" if numbered and n not in inactive else _short(n))
                 for n in names]
        labels.append(texts)
        widths.append([max(56.0, CHAR_W * len(t) + 20) for t in texts])
    inner = max((sum(w) + COL_GAP * (len(w) - 1) for w in widths if w), default=120.0)
    width = LEFT + inner + 2 * PAD
    boxes: dict[str, Box] = {}
    tier_y: list[tuple[int, float]] = []
    for line_no, ((tier_index, on_line), ws, texts) in enumerate(zip(lines, widths, labels, strict=True)):
        y = TOP + line_no * ROW_GAP
        if not tier_y or tier_y[-1][0] != tier_index:
            tier_y.append((tier_index, y))
        row_w = sum(ws) + COL_GAP * (len(ws) - 1)
        x = LEFT + PAD + (inner - row_w) / 2
        for name, w, text in zip(on_line, ws, texts, strict=True):
            boxes[name] = Box(name, text, x, y, w, line_no, name in inactive)
            x += w + COL_GAP
    height = TOP + (len(lines) - 1) * ROW_GAP + NODE_H + 44
    return boxes, tier_y, width, height


def _offsets(edges: list[Edge | RemovedEdge], boxes: dict[str, Box]) -> dict[tuple[str, str, str], float]:
    """Where each edge leaves its source and reaches its target along the box's edge: spread, so several
    edges of one node do not start from one point."""
    out: dict[tuple[str, str, str], float] = {}
    for end in ("src", "dst"):
        groups: dict[str, list[Edge | RemovedEdge]] = {}
        for e in edges:
            if e.src == e.dst:
                out[(end, e.src, e.dst)] = 0.0
                continue
            groups.setdefault(getattr(e, end), []).append(e)
        for name, group in groups.items():
            box = boxes[name]
            other = "dst" if end == "src" else "src"
            group.sort(key=lambda e: boxes[getattr(e, other)].cx)
            n = len(group)
            for i, e in enumerate(group):
                spread = box.w * 0.6
                out[(end, e.src, e.dst)] = (i - (n - 1) / 2) * (spread / max(1, n - 1)) if n > 1 else 0.0
    return out


def _path(a: Box, b: Box, da: float, db: float, bow: float = 0.0) -> tuple[str, float, float]:
    """A cubic curve from a to b, and the point halfway along it (for the score). ``bow``: how far sideways the
    curve swings between two lines (its middle moves by 3/4 of it), to pass a box or a reverse edge."""
    if a.name == b.name:  # an agent hearing itself (DMoA's handoff of its previous step): a loop on its left
        x0, y0, x3, y3 = a.x, a.y + 7, a.x, a.y + NODE_H - 7
        x1, y1, x2, y2 = a.x - 34, a.y - 10, a.x - 34, a.y + NODE_H + 10
        return f"M{x0:.1f},{y0:.1f} C{x1:.1f},{y1:.1f} {x2:.1f},{y2:.1f} {x3:.1f},{y3:.1f}", a.x - 30, a.y - 6
    if b.line > a.line:  # down: bottom of a to top of b
        x0, y0, x3, y3 = a.cx + da, a.y + NODE_H, b.cx + db, b.y
        bend = (y3 - y0) * 0.5
        x1, y1, x2, y2 = x0, y0 + bend, x3, y3 - bend
    elif b.line < a.line:  # up (a cycle kept, a removed back edge): out of a's top, into b's bottom
        x0, y0, x3, y3 = a.cx + da, a.y, b.cx + db, b.y + NODE_H
        bend = (y0 - y3) * 0.5
        x1, y1, x2, y2 = x0, y0 - bend, x3, y3 + bend
    else:  # same line: left to right arcs over the boxes, right to left under them
        over = b.cx > a.cx
        lift = -(26 + 0.12 * abs(b.cx - a.cx)) if over else 26 + 0.12 * abs(b.cx - a.cx)
        y0 = a.y if over else a.y + NODE_H
        x0, x3, y3 = a.cx + da, b.cx + db, y0
        x1, y1, x2, y2 = x0, y0 + lift, x3, y3 + lift
    if a.line != b.line:
        x1, x2 = x1 + bow, x2 + bow
    mx = (x0 + 3 * x1 + 3 * x2 + x3) / 8
    my = (y0 + 3 * y1 + 3 * y2 + y3) / 8
    return f"M{x0:.1f},{y0:.1f} C{x1:.1f},{y1:.1f} {x2:.1f},{y2:.1f} {x3:.1f},{y3:.1f}", mx, my


_DASHED = {KIND_FEEDBACK: "dash", KIND_CROSS: "dash", KIND_HANDOFF: "dot"}
# On the drawing a typed edge's kind is its line (STYLE_NOTES says which): the label keeps to the number, so
# labels of a dense typed graph do not run into each other; the edge list beside it names each kind.
_LABELS: dict[str, Callable[[Edge], str]] = {
    KIND_HANDOFF: lambda e: f"α {e.score:.2f}",
    KIND_CONDITIONED: lambda e: f"{e.score:.2f}",
    KIND_FEEDBACK: lambda e: f"{e.score:.2f}",
    KIND_DEBATE: lambda e: f"{e.score:.2f}",
}
STYLE_NOTES = {
    KIND_CONDITIONED: "solid: conditioned",
    KIND_FEEDBACK: "dashed: feedback",
    KIND_DEBATE: "thick, two heads: debate",
    KIND_CROSS: "dashed: cross (its own earlier turn)",
    KIND_HANDOFF: "dotted: handoff (α)",
    KIND_PINNED: "thick orange: pinned by the user",
}


def style_note(routing: RoutingResult) -> str:
    """What the line styles of this graph's edges mean ("" when every edge is a plain arrow)."""
    notes = [STYLE_NOTES[k] for k in routing.kinds if k in STYLE_NOTES]
    if any(r.reason == RemovalReason.CUT for r in routing.removed):
        notes.append("red dashed: cut by the user")
    return " · ".join(notes)


def _bows(edges: list[Edge | RemovedEdge], boxes: dict[str, Box],
          offsets: dict[tuple[str, str, str], float]) -> dict[tuple[str, str], float]:
    """Sideways swings: an edge that skips a line goes round the boxes in its way (alternately right and left,
    further for each, so several skipping edges do not share one curve); an edge drawn both ways between two
    lines splits into two curves."""
    pairs = {(e.src, e.dst) for e in edges}
    out: dict[tuple[str, str], float] = {}
    passes = 0
    for e in edges:
        a, b = boxes[e.src], boxes[e.dst]
        bow = 0.0
        if (e.dst, e.src) in pairs and a.line != b.line:
            bow = 36.0 if b.line > a.line else -36.0
        low, high = sorted((a.line, b.line))
        if high - low > 1:
            x0, x3 = a.cx + offsets[("src", e.src, e.dst)], b.cx + offsets[("dst", e.src, e.dst)]
            middle = (x0 + x3) / 2
            left, right = min(x0, x3) - 10, max(x0, x3) + 10
            blocking = [box for box in boxes.values() if low < box.line < high and box.x < right
                        and box.x + box.w > left]
            if blocking:
                extra = 18.0 * (passes // 2)
                if passes % 2 == 0:  # the curve's middle moves by 3/4 of the bow
                    bow = (max(box.x + box.w for box in blocking) + 14 + extra - middle) / 0.75
                else:
                    bow = (min(box.x for box in blocking) - 14 - extra - middle) / 0.75
                passes += 1
        out[(e.src, e.dst)] = bow
    return out


def graph_svg(routing: RoutingResult, *, tiered: bool = True, uid: str = "g", caption: str = "") -> str:
    """The drawing of one graph. ``uid`` makes the arrowheads' ids unique in the page."""
    boxes, tier_y, width, height = _layout(routing, tiered)
    drawn = [e for e in routing.edges if e.src in boxes and e.dst in boxes]
    removed = [r for r in routing.removed if r.src in boxes and r.dst in boxes]
    offsets = _offsets([*drawn, *removed], boxes)
    bows = _bows([*drawn, *removed], boxes, offsets)
    reach = [0.0, width]  # the drawing's left and right ends: a swinging curve may pass the boxes' edges
    heads = {"a": "var(--accent)", "p": "var(--pin)", "r": "var(--mute)", "c": "var(--cut)"}
    defs = "".join(
        f'<marker id="{uid}-{k}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="10" markerHeight="10" '
        'markerUnits="userSpaceOnUse" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" style="fill:{color}"/></marker>'
        for k, color in heads.items()
    )
    out: list[str] = []
    if tiered and routing.tiers:
        for tier, y in tier_y:
            label = f"T{tier}" if tier < len(routing.tiers) else "off"  # agents of the graph that do not run
            out.append(f'<text class="tier" x="8" y="{y + 17:.0f}">{label}</text>')
    for r in removed:
        cut = r.reason == RemovalReason.CUT
        d, mx, my = _path(boxes[r.src], boxes[r.dst], offsets[("src", r.src, r.dst)], offsets[("dst", r.src, r.dst)],
                          bows[(r.src, r.dst)])
        reach = [min(reach[0], mx - 40), max(reach[1], mx + 40)]
        text = f"cut {r.score:.2f}" if cut else f"{r.score:.2f} {r.reason}"
        out.append(
            f'<g class="edge-removed{" cut" if cut else ""}" data-src="{esc(r.src)}" data-dst="{esc(r.dst)}" '
            f'data-kind="{esc(r.kind)}" data-score="{r.score:.4f}" data-reason="{esc(r.reason)}">'
            f"<title>{esc(r.src)} → {esc(r.dst)}: removed ({esc(r.reason)}), score {r.score:.2f}</title>"
            f'<path d="{d}" marker-end="url(#{uid}-{"c" if cut else "r"})"/>'
            f'<text x="{mx:.1f}" y="{my + 4:.1f}" text-anchor="middle">{esc(text)}</text></g>'
        )
    for e in drawn:
        pinned = e.kind == KIND_PINNED
        classes = " ".join(c for c in ("edge", esc(e.kind), _DASHED.get(e.kind, "")) if c)
        head = "p" if pinned else "a"
        d, mx, my = _path(boxes[e.src], boxes[e.dst], offsets[("src", e.src, e.dst)], offsets[("dst", e.src, e.dst)],
                          bows[(e.src, e.dst)])
        reach = [min(reach[0], mx - 40), max(reach[1], mx + 40)]
        start = f' marker-start="url(#{uid}-{head})"' if e.kind == KIND_DEBATE else ""
        label = f"pin {e.score:.2f}" if pinned else _LABELS.get(e.kind, edge_label)(e)
        out.append(
            f'<g class="{classes}" data-src="{esc(e.src)}" data-dst="{esc(e.dst)}" data-kind="{esc(e.kind)}" '
            f'data-score="{e.score:.4f}"><title>{esc(e.src)} → {esc(e.dst)}: {esc(label)}'
            f"{' (pinned by the user)' if pinned else ''}</title>"
            f'<path d="{d}" marker-end="url(#{uid}-{head})"{start}/>'
            f'<text x="{mx:.1f}" y="{my + 4:.1f}" text-anchor="middle">{esc(label)}</text></g>'
        )
    for box in boxes.values():
        note = " (not running)" if box.inactive else ""
        out.append(
            f'<g class="node{" inactive" if box.inactive else ""}" data-name="{esc(box.name)}">'
            f"<title>{esc(box.name)}{note}</title>"
            f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{NODE_H}" rx="6"/>'
            f'<text x="{box.cx:.1f}" y="{box.y + 17:.1f}" text-anchor="middle">{esc(box.label)}</text></g>'
        )
    out.append("</svg>")
    left, span = reach[0], reach[1] - reach[0]
    aria = esc(caption or "the graph")
    head = (f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" viewBox="{left:.0f} 0 {span:.0f} {height:.0f}" '
            f'style="max-width:{span * 1.25:.0f}px" role="img" aria-label="{aria}"><defs>{defs}</defs>')
    return head + "".join(out)


def nodes_svg(names: list[str], *, caption: str = "") -> str:
    """Agents without edges drawn (a broadcast round: everyone hears everyone; said in the caption)."""
    routing = RoutingResult(names=list(names), tau=0.0, k_in=0, similarity=[], edges=[], order=list(names))
    return graph_svg(routing, tiered=False, caption=caption)
