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
KIND_BROADCAST = "broadcast"  # a drawing-only kind: a broadcast round's every-to-every arrows


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


Point = tuple[float, float]
Curve = tuple[Point, Point, Point, Point]  # a cubic Bézier: start, two control points, end


def _curve(a: Box, b: Box, da: float, db: float, bow: float = 0.0) -> Curve:
    """A cubic curve from a to b. ``bow``: how far sideways the curve swings between two lines (its middle moves
    by 3/4 of it), or how much higher its arc rises on one line, to pass a box or a reverse edge."""
    if a.name == b.name:  # an agent hearing itself (DMoA's handoff of its previous step): a loop on its left
        return ((a.x, a.y + 7), (a.x - 34, a.y - 10), (a.x - 34, a.y + NODE_H + 10), (a.x, a.y + NODE_H - 7))
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
        rise = 26 + 0.12 * abs(b.cx - a.cx) + abs(bow)
        lift = -rise if over else rise
        y0 = a.y if over else a.y + NODE_H
        x0, x3, y3 = a.cx + da, b.cx + db, y0
        return ((x0, y0), (x0, y0 + lift), (x3, y3 + lift), (x3, y3))
    return ((x0, y0), (x1 + bow, y1), (x2 + bow, y2), (x3, y3))


def _at(c: Curve, t: float) -> Point:
    u = 1 - t
    w = (u * u * u, 3 * u * u * t, 3 * u * t * t, t * t * t)
    return sum(k * p[0] for k, p in zip(w, c, strict=True)), sum(k * p[1] for k, p in zip(w, c, strict=True))


def _d(c: Curve) -> str:
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = c
    return f"M{x0:.1f},{y0:.1f} C{x1:.1f},{y1:.1f} {x2:.1f},{y2:.1f} {x3:.1f},{y3:.1f}"


def _inside(p: Point, box: Box, margin: float = 4.0) -> bool:
    return box.x - margin <= p[0] <= box.x + box.w + margin and box.y - margin <= p[1] <= box.y + NODE_H + margin


def _hits(c: Curve, boxes: dict[str, Box], ends: tuple[str, str]) -> int:
    """How many points along the curve lie on a box other than its own two: a curve through a box reads as an
    edge of that box."""
    others = [b for name, b in boxes.items() if name not in ends]
    return sum(1 for i in range(1, 60) if any(_inside(_at(c, i / 60), b) for b in others))


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


def _routes(edges: list[Edge | RemovedEdge], boxes: dict[str, Box],
            offsets: dict[tuple[str, str, str], float]) -> dict[tuple[str, str], Curve]:
    """Each edge's curve: the least swing that passes no other box (swinging right and left in turn, further each
    time); an edge drawn both ways between two lines starts from a split, so the two read as two curves."""
    pairs = {(e.src, e.dst) for e in edges}
    out: dict[tuple[str, str], Curve] = {}
    for e in edges:
        a, b = boxes[e.src], boxes[e.dst]
        base = 0.0
        if (e.dst, e.src) in pairs and a.line != b.line:
            base = 36.0 if b.line > a.line else -36.0
        da, db = offsets[("src", e.src, e.dst)], offsets[("dst", e.src, e.dst)]
        best: tuple[int, Curve] | None = None
        for bow in [base] + [base + sign * 16.0 * k for k in range(1, 31) for sign in (1, -1)]:
            curve = _curve(a, b, da, db, bow)
            hits = _hits(curve, boxes, (e.src, e.dst)) if a.name != b.name else 0
            if best is None or hits < best[0]:
                best = (hits, curve)
            if hits == 0:
                break
        assert best is not None
        out[(e.src, e.dst)] = best[1]
    return out


LABEL_CHAR = 6.4  # an 11px character, roughly
LABEL_AT = (0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.18, 0.82)  # where along a curve a label may sit


def _place_labels(items: list[tuple[tuple[str, str], Curve, str]], boxes: dict[str, Box]) -> dict[tuple[str, str],
                                                                                                    Point]:
    """Where each edge's label goes: the point nearest the curve's middle where it covers no node and no label
    placed before it (kept edges are placed first, so a removed edge's label never covers theirs)."""
    taken: list[tuple[float, float, float, float]] = [(b.x, b.y, b.x + b.w, b.y + NODE_H) for b in boxes.values()]
    out: dict[tuple[str, str], Point] = {}
    for key, curve, text in items:
        half = (LABEL_CHAR * len(text) + 6) / 2
        best: tuple[int, Point] | None = None
        for t in LABEL_AT:
            x, y = _at(curve, t)
            rect = (x - half, y - 8, x + half, y + 8)
            hits = sum(1 for r in taken if rect[0] < r[2] and r[0] < rect[2] and rect[1] < r[3] and r[1] < rect[3])
            if best is None or hits < best[0]:
                best = (hits, (x, y))
            if hits == 0:
                break
        assert best is not None
        x, y = best[1]
        taken.append((x - half, y - 8, x + half, y + 8))
        out[key] = (x, y)
    return out


def _defs(uid: str) -> str:
    heads = {"a": "var(--accent)", "p": "var(--pin)", "r": "var(--mute)", "c": "var(--cut)"}
    return "".join(
        f'<marker id="mk-{uid}-{k}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="10" markerHeight="10" '
        'markerUnits="userSpaceOnUse" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" style="fill:{color}"/></marker>'
        for k, color in heads.items()
    )


def _label(e: Edge | RemovedEdge) -> str:
    if isinstance(e, RemovedEdge):
        return f"cut {e.score:.2f}" if e.reason == RemovalReason.CUT else f"{e.score:.2f} {e.reason}"
    if e.kind == KIND_BROADCAST:
        return ""
    return f"pin {e.score:.2f}" if e.kind == KIND_PINNED else _LABELS.get(e.kind, edge_label)(e)


def _edge_group(e: Edge | RemovedEdge, d: str, at: Point | None, uid: str) -> str:
    """One edge: its line, arrowhead, label and the data a reader (or a test) checks it by."""
    label = _label(e)
    text = f'<text x="{at[0]:.1f}" y="{at[1] + 4:.1f}" text-anchor="middle">{esc(label)}</text>' if at else ""
    ends = f'data-src="{esc(e.src)}" data-dst="{esc(e.dst)}" data-kind="{esc(e.kind)}" data-score="{e.score:.4f}"'
    if isinstance(e, RemovedEdge):
        cut = e.reason == RemovalReason.CUT
        return (f'<g class="edge-removed{" cut" if cut else ""}" {ends} data-reason="{esc(e.reason)}">'
                f"<title>{esc(e.src)} → {esc(e.dst)}: removed ({esc(e.reason)}), score {e.score:.2f}</title>"
                f'<path d="{d}" marker-end="url(#mk-{uid}-{"c" if cut else "r"})"/>{text}</g>')
    if e.kind == KIND_BROADCAST:  # not a routed edge: a class of its own, so no reader counts it as one
        return (f'<g class="edge-broadcast" data-src="{esc(e.src)}" data-dst="{esc(e.dst)}">'
                f"<title>{esc(e.src)} → {esc(e.dst)}: broadcast</title>"
                f'<path d="{d}" marker-end="url(#mk-{uid}-r)"/></g>')
    pinned = e.kind == KIND_PINNED
    classes = " ".join(c for c in ("edge", esc(e.kind), _DASHED.get(e.kind, "")) if c)
    head = "p" if pinned else "a"
    start = f' marker-start="url(#mk-{uid}-{head})"' if e.kind == KIND_DEBATE else ""
    return (f'<g class="{classes}" {ends}><title>{esc(e.src)} → {esc(e.dst)}: {esc(label)}'
            f"{' (pinned by the user)' if pinned else ''}</title>"
            f'<path d="{d}" marker-end="url(#mk-{uid}-{head})"{start}/>{text}</g>')


def graph_svg(routing: RoutingResult, *, tiered: bool = True, uid: str = "g", caption: str = "") -> str:
    """The drawing of one graph. ``uid`` makes the arrowheads' ids unique in the page."""
    boxes, tier_y, width, height = _layout(routing, tiered)
    drawn = [e for e in routing.edges if e.src in boxes and e.dst in boxes]
    removed = [r for r in routing.removed if r.src in boxes and r.dst in boxes]
    edges: list[Edge | RemovedEdge] = [*drawn, *removed]
    curves = _routes(edges, boxes, _offsets(edges, boxes))
    labelled = [((e.src, e.dst), curves[(e.src, e.dst)], _label(e)) for e in edges if _label(e)]
    spots = _place_labels(labelled, boxes)
    reach = [0.0, width]  # the drawing's left and right ends: a swinging curve may pass the boxes' edges
    rise = [0.0, height]  # its top and bottom: a long arc on one line may rise above the first line
    for c in curves.values():
        xs, ys = zip(*(_at(c, i / 8) for i in range(9)), strict=True)
        reach = [min(reach[0], min(xs) - 10), max(reach[1], max(xs) + 10)]
        rise = [min(rise[0], min(ys) - 8), max(rise[1], max(ys) + 8)]
    for key, text in ((k, t) for k, _, t in labelled):
        reach = [min(reach[0], spots[key][0] - LABEL_CHAR * len(text) / 2 - 6),
                 max(reach[1], spots[key][0] + LABEL_CHAR * len(text) / 2 + 6)]
    out: list[str] = []
    if tiered and routing.tiers:
        for tier, y in tier_y:
            label = f"T{tier}" if tier < len(routing.tiers) else "off"  # agents of the graph that do not run
            out.append(f'<text class="tier" x="8" y="{y + 17:.0f}">{label}</text>')
    # Removed edges first (under the kept ones), the nodes last (over every line).
    below: list[Edge | RemovedEdge] = [*removed, *drawn]
    out += [_edge_group(e, _d(curves[(e.src, e.dst)]), spots.get((e.src, e.dst)), uid) for e in below]
    for box in boxes.values():
        note = " (not running)" if box.inactive else ""
        out.append(
            f'<g class="node{" inactive" if box.inactive else ""}" data-name="{esc(box.name)}">'
            f"<title>{esc(box.name)}{note}</title>"
            f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{NODE_H}" rx="6"/>'
            f'<text x="{box.cx:.1f}" y="{box.y + 17:.1f}" text-anchor="middle">{esc(box.label)}</text></g>'
        )
    left, span = reach[0], reach[1] - reach[0]
    aria = esc(caption or "the graph")
    view = f"{left:.0f} {rise[0]:.0f} {span:.0f} {rise[1] - rise[0]:.0f}"
    head = (f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" viewBox="{view}" '
            f'style="max-width:{span * 1.25:.0f}px" role="img" aria-label="{aria}"><defs>{_defs(uid)}</defs>')
    return head + "".join(out) + "</svg>"


def nodes_svg(names: list[str], *, caption: str = "", uid: str = "g", broadcast: bool = False) -> str:
    """Agents on one line; ``broadcast``: with a thin arrow from each to every other (everyone hears everyone),
    drawn as ``g.edge-broadcast``, not as routed edges."""
    edges = [Edge(a, b, 0.0, KIND_BROADCAST) for a in names for b in names if a != b] if broadcast else []
    routing = RoutingResult(names=list(names), tau=0.0, k_in=0, similarity=[], edges=edges, order=list(names))
    return graph_svg(routing, tiered=False, caption=caption, uid=uid)
