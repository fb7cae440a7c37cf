"""Where a round's graph puts its agents: the order they run in and the one-line legend.

Pure functions of a RoutingResult, shared by the terminal drawing (tui.widgets.graph_render) and the HTML
export's SVG (core.sessions.html.graph_svg), so a graph reads the same in the terminal and in a browser:
one row per tier, nodes numbered in the order they run.
"""

from __future__ import annotations

from core.routing.dytopo import RemovalReason, RoutingResult


def run_order(routing: RoutingResult, tiered: bool = True) -> list[str]:
    """The order agents run in: tier by tier (a tier's agents in the order listed) when tiers are how
    the graph runs, else the routing's order (single-pass: the order messages are delivered in)."""
    if tiered and routing.tiers:
        flat = [name for tier in routing.tiers for name in tier]
        return flat + [name for name in routing.order if name not in flat]
    return list(routing.order) or list(routing.names)


def rows(routing: RoutingResult, tiered: bool = True) -> list[list[str]]:
    """The drawing's rows: one per tier when tiers are how the graph runs, else one row of every agent;
    agents of the graph that no tier holds (not running) in a last row of their own."""
    if not (tiered and routing.tiers):
        return [run_order(routing, tiered=False)]
    out = [list(tier) for tier in routing.tiers]
    placed = {name for tier in out for name in tier}
    rest = [name for name in [*routing.order, *routing.names] if name not in placed]
    if rest:
        out.append(list(dict.fromkeys(rest)))
    return out


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
    # "2 by k_in", "1 by cycle"; a steering cut says who: "1 cut by user".
    cut = [f"{count} {reason}" if reason == RemovalReason.CUT else f"{count} by {reason}"
           for reason, count in removed.items() if count]
    if cut:
        parts.append("removed " + ", ".join(cut))
    if not routing.acyclic:
        parts.append("cycles kept")
    text = " · ".join(parts)
    return f"{tag} · {text}" if tag else text
