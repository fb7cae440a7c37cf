"""What travels along DyTopo's edges (arXiv 2602.06039, §3.1 eq. 3, §3.4): the message a sender's reply makes for
each recipient, the deliveries of each kind of round (broadcast, a phased tier, at the barrier) and how an inbox
shows them, strongest first. A delivery is a dict (src, dst, score, content), as MessagesRouted records it."""

from __future__ import annotations

from typing import Any

from core.routing.dytopo import RoutingResult
from core.runtime.engine import AgentResult

# What travels along an edge (method option "payload"):
PAYLOAD_PRIVATE = "private"  # the paper (§3.1, eq. 3): only the private message; public goes to the Manager
PAYLOAD_BOTH = "private+public"  # the reference deployment: the private note, then the public work
PAYLOAD_AUTO = "auto"  # private for the single-pass (paper) protocol, private+public for phased
PAYLOADS = (PAYLOAD_AUTO, PAYLOAD_PRIVATE, PAYLOAD_BOTH)

Delivery = dict[str, Any]


def message_for(sender: AgentResult, recipient: str, payload: str = PAYLOAD_BOTH) -> str:
    """What flows along an edge. The sender's private message for this recipient (or for "all") comes
    first; with PAYLOAD_BOTH its public work follows. With PAYLOAD_PRIVATE only the private message
    travels, and a sender that wrote none sends its public work instead, so an edge is never empty.
    Notes are matched to the recipient's role name without regard to case."""
    notes = {k.strip().lower(): v for k, v in sender.private.items() if isinstance(v, str) and v.strip()}
    note = notes.get(recipient.lower()) or notes.get("all") or notes.get("*")
    if note and payload == PAYLOAD_PRIVATE:
        return note.strip()
    if note:
        return f"Note for you: {note}\n\n{sender.public}".strip()
    return sender.public


def _delivery(src: str, dst: str, score: float | None, results: dict[str, AgentResult], payload: str) -> Delivery:
    return {"src": src, "dst": dst, "score": score, "content": message_for(results[src], dst, payload)}


def broadcast(active: list[str], results: dict[str, AgentResult], payload: str) -> list[Delivery]:
    """Round 1 of the phased protocol: every output goes to every other worker (no score)."""
    return [
        _delivery(src, dst, None, results, payload)
        for dst in active
        for src in active
        if src != dst and results[src].public
    ]


def to_tier(routing: RoutingResult, tier: list[str], results: dict[str, AgentResult], payload: str
            ) -> list[Delivery]:
    """What a tier receives along its in-edges from the workers that already ran (paper §3.4)."""
    return [
        _delivery(edge.src, dst, edge.score, results, payload)
        for dst in tier for edge in routing.in_edges(dst)
        if edge.src in results and results[edge.src].public
    ]


def late(routing: RoutingResult, received: dict[str, list[Delivery]], results: dict[str, AgentResult],
         payload: str) -> list[Delivery]:
    """A phased round's edges whose provider did not run in an earlier tier (a wiring rule that keeps cycles,
    e.g. broadcast): they deliver at the barrier, into next round's memory."""
    delivered = {(d["src"], d["dst"]) for deliveries in received.values() for d in deliveries}
    return [
        _delivery(e.src, e.dst, e.score, results, payload)
        for e in routing.edges
        if (e.src, e.dst) not in delivered and e.src in results and results[e.src].public
    ]


def at_barrier(routing: RoutingResult, results: dict[str, AgentResult], payload: str) -> list[Delivery]:
    """Single-pass (paper eq. 3, Algorithm 1): every edge delivers after the barrier, in the routing's order.
    A copied template (no public text) sends nothing."""
    return [
        _delivery(edge.src, dst, edge.score, results, payload)
        for dst in routing.order
        for edge in routing.in_edges(dst)
        if edge.src in results and results[edge.src].public
    ]


def render_inbox(deliveries: list[Delivery]) -> str:
    """Routed messages, strongest first (paper §3.4)."""
    ordered = sorted(deliveries, key=lambda d: (-(d["score"] or 0.0), d["src"]))
    return "\n\n".join(
        f"[from {d['src']}" + (f", relevance {d['score']:.2f}" if d["score"] is not None else "") + f"]\n{d['content']}"
        for d in ordered
    )
