"""Per-agent memory H_i (paper eq. 1 and 3), bounded by a token budget.

Items are appended in order; when rendering for a prompt the oldest items go first until the rest fits
the budget, and the caller is told how much was dropped so it can be recorded as an event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.llm.tokens import estimate_tokens


@dataclass(frozen=True)
class MemoryItem:
    round: int
    kind: str  # "goal" | "own" | "broadcast" | "routed" | "feedback"
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
        }.get(self.kind, self.source)
        return f"[round {self.round}, {label}]\n{self.text}"


@dataclass
class AgentMemory:
    items: list[MemoryItem] = field(default_factory=list)
    dropped_items: int = 0  # total dropped so far, for the record

    def add(self, item: MemoryItem) -> None:
        if item.text.strip():
            self.items.append(item)

    def visible(self, since_round: int = 0, newer_from: frozenset[str] = frozenset()) -> list[MemoryItem]:
        """The items a prompt shows: from ``since_round`` on, and only the newest item per source.

        A sender's newer message supersedes its older ones (a revised draft, the latest test results, your
        own latest output): repeating every earlier version in every later prompt was most of what a
        DyTopo prompt carried, and none of it is new to the recipient. Nothing is lost from the record:
        the session keeps every message, and the oldest-first budget trim below still applies.
        ``newer_from``: teammates whose message of this round is in the prompt's inbox (it supersedes theirs
        in memory)."""
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
