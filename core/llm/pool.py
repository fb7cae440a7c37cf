"""Several endpoints serving the same model, used as one client: each call goes to the endpoint with the
fewest calls outstanding (ties: the first given), so a sweep spreads over every server it was given."""

from __future__ import annotations

from typing import Any

from core.llm.client import LLMClient
from core.llm.result import ChatResult
from core.llm.slots import SlotTable


class LLMPool(LLMClient):
    """An LLMClient over member clients. Every question other than a chat (the model, the listing, what
    the endpoint accepts) is answered by the first member, whose settings the pool shares."""

    def __init__(self, members: list[LLMClient]) -> None:  # no super().__init__: the pool has no connection
        if not members:
            raise ValueError("an endpoint pool needs at least one client")
        self.__dict__.update(vars(members[0]))  # model, timeouts, the first member's connection for listings
        # The pool's own slot plan: a run's plan on the pool is not its first member's, so the members' calls
        # name no slot (each member is a server of its own).
        self.slot_table = SlotTable(total=members[0].total_slots, per_agent=members[0].slot_table.per_agent)
        self.members = list(members)
        self.outstanding = [0] * len(members)
        self.served = [0] * len(members)  # calls each endpoint took (the bench reports the spread)
        self.calls = 0

    def _pick(self) -> int:
        return min(range(len(self.members)), key=lambda i: (self.outstanding[i], i))

    async def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> ChatResult:
        index = self._pick()
        self.outstanding[index] += 1
        self.served[index] += 1
        self.calls += 1
        try:
            return await self.members[index].chat(messages, **kwargs)
        finally:
            self.outstanding[index] -= 1

    async def close(self) -> None:
        for member in self.members:
            await member.close()
