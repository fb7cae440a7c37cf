"""Per-agent memory H_i (paper eq. 1 and 3), bounded by a token budget.

Items are appended in order; when rendering for a prompt the oldest items go first until the rest fits
the budget, and the caller is told how much was dropped so it can be recorded as an event.

Two rules for what a prompt shows (a method's ``memory`` option):
* ``accumulate`` (the default, DyTopo eq. 3): H_i(t+1) = H_i(t) ∪ own output ∪ routed messages, so every
  earlier own output and every message routed in earlier rounds;
* ``latest``: only the newest item per sender (an economy: fewer prompt tokens, but a teammate's earlier
  messages vanish once a newer one arrives, which the paper does not do).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from core.llm.tokens import estimate_tokens


@dataclass(frozen=True)
class MemoryItem:
    round: int
    kind: str  # "goal" | "own" | "broadcast" | "routed" | "feedback" | "user" (a note from the person steering)
    source: str  # who it came from
    text: str
    score: float | None = None  # routing relevance, for routed items

    def render(self) -> str:
        label = {
            "goal": "Manager goal",
            "own": "your output",
            "broadcast": f"from {self.source}",
            "routed": f"from {self.source}" + (f" (relevance {self.score:.2f})" if self.score is not None else ""),
            "feedback": f"{self.source}",
            "user": f"from {self.source}, the person running this team",
        }.get(self.kind, self.source)
        return f"[round {self.round}, {label}]\n{self.text}"


class MemoryRule(StrEnum):
    ACCUMULATE = "accumulate"
    LATEST = "latest"


MEMORY_RULES = tuple(MemoryRule)


@dataclass
class AgentMemory:
    items: list[MemoryItem] = field(default_factory=list)
    dropped_items: int = 0  # total dropped so far, for the record
    rule: str = MemoryRule.ACCUMULATE  # MEMORY_RULES

    def add(self, item: MemoryItem) -> None:
        if item.text.strip():
            self.items.append(item)

    def visible(self, since_round: int = 0, newer_from: frozenset[str] = frozenset()) -> list[MemoryItem]:
        """The items a prompt shows, from ``since_round`` on.

        ``accumulate`` (eq. 3) shows them all. ``latest`` shows only the newest item per source: a sender's
        newer message supersedes its older ones (a revised draft, the latest test results, your own latest
        output), and ``newer_from`` names teammates whose message of this round is in the prompt's inbox
        (it supersedes theirs in memory). Nothing is lost from the record either way: the session keeps
        every message, and the oldest-first budget trim below applies to both rules."""
        if self.rule == MemoryRule.ACCUMULATE:
            return [item for item in self.items if item.round >= since_round]
        newest: dict[tuple[str, str], int] = {}
        for index, item in enumerate(self.items):
            newest[(_source_group(item.kind), item.source)] = index
        keep = set(newest.values())
        return [
            item
            for index, item in enumerate(self.items)
            if index in keep
            and item.round >= since_round
            and not (item.kind in ("broadcast", "routed") and item.source in newer_from)
        ]

    def rendered(
        self, *, since_round: int = 0, newer_from: frozenset[str] = frozenset()
    ) -> list[tuple[MemoryItem, str]]:
        """The visible items, oldest first, each with its text as a prompt shows it."""
        return [(item, item.render()) for item in self.visible(since_round, newer_from)]

    def forget(self, items: list[MemoryItem]) -> None:
        """Drop these items for good (the oldest first, as render does when over its budget)."""
        cut = set(map(id, items))
        before = len(self.items)
        self.items = [item for item in self.items if id(item) not in cut]
        self.dropped_items += before - len(self.items)

    def render(
        self, budget_tokens: int, *, since_round: int = 0, newer_from: frozenset[str] = frozenset()
    ) -> tuple[str, int, int]:
        """(text within budget, items dropped now, tokens dropped now). Drops the oldest first, and drops
        them for good: memory only ever shrinks from the old end, so later prompts stay consistent."""
        shown = self.visible(since_round, newer_from)
        rendered = [item.render() for item in shown]
        costs = [estimate_tokens(r) + 1 for r in rendered]
        total = sum(costs)
        drop = 0
        dropped_tokens = 0
        while total > budget_tokens and drop < len(rendered):
            total -= costs[drop]
            dropped_tokens += costs[drop]
            drop += 1
        if drop:
            cut = set(map(id, shown[:drop]))
            self.items = [item for item in self.items if id(item) not in cut]
            rendered = rendered[drop:]
            self.dropped_items += drop
        return "\n\n".join(rendered), drop, dropped_tokens


def _source_group(kind: str) -> str:
    """Messages from one teammate supersede each other whether broadcast or routed."""
    return "message" if kind in ("broadcast", "routed") else kind
