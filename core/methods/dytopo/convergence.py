"""DyTopo's convergence check (arXiv 2602.06039, §3.5.2): the least similarity of any worker's public output to its
previous round's. The run has converged when even the worker that changed most changed by less than
1 - threshold (default 0.95) in difflib's character ratio: nobody is adding anything."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.runtime.convergence import text_similarity
from core.runtime.engine import AgentResult
from core.runtime.events import CallStatus
from core.runtime.run_context import notice

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext


class OutputDrift:
    """Each worker's previous public output (``previous``: restored by a fork's replay), to compare with."""

    def __init__(self) -> None:
        self.previous: dict[str, str] = {}

    def measure(self, ctx: RunContext, outputs: dict[str, AgentResult]) -> float | None:
        """Least similarity of any worker's public output to its previous round's; None in round 1."""
        # A failed turn said nothing: "" after "" is no sign of convergence (a server failing every call).
        current = {name: r.public for name, r in outputs.items() if r.status != CallStatus.FAILED}
        previous = self.previous
        self.previous = current
        if not any(text.strip() for text in current.values()):
            # Copied templates, failures: the same nothing twice is no sign of convergence.
            notice(ctx, "no agent wrote its own content this round: not converged", "warning")
            return None
        if not previous:
            return None
        scores = [text_similarity(previous[name], text) for name, text in current.items() if name in previous]
        return round(min(scores), 4) if scores else None
