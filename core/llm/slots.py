"""llama.cpp's request slots: the slot each agent keeps, so that the slot's KV cache holds that agent's
previous prompt and the next one is served from it (``id_slot`` in the request body), when the settings ask for
a slot per agent; by default the server places each call (core.runtime.config.SlotPlacement says why)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SlotTable:
    """``total``: the server's slots (/props total_slots; None: it does not say). ``per_agent``: keep each
    agent on a slot of its own (the ``llama_slots = "per-agent"`` setting); else the server places every call.
    ``assigned``: agent -> slot, empty when the server places the calls. ``runs``: the runs using the client
    now, by token: their agents."""

    total: int | None = None
    per_agent: bool = False
    assigned: dict[str, int] = field(default_factory=dict)
    runs: dict[int, list[str]] = field(default_factory=dict)
    last_run: int = 0

    def plan(self, agents: list[str]) -> int:
        """A run starts with these agents: with ``per_agent``, keep each on a slot of its own when the server
        reports enough of them (llama.cpp), so each prompt meets its agent's previous one in that slot's cache.
        Without it (the default), no slot is named. With fewer slots
        than agents, or several runs sharing the client at once (a comparison, a benchmark's concurrency,
        whose agents share names), no slot is named and the server picks one by prompt similarity. An agent
        named later takes a free slot if any. Returns the run's token for release."""
        self.last_run += 1
        self.runs[self.last_run] = list(dict.fromkeys(agents))
        self._replan()
        return self.last_run

    def release(self, run: int) -> None:
        """The run has ended: its agents' slots are free for the next run."""
        self.runs.pop(run, None)
        self._replan()

    def _replan(self) -> None:
        runs = list(self.runs.values())
        names = runs[0] if len(runs) == 1 else []
        fits = self.per_agent and bool(names) and bool(self.total) and len(names) <= (self.total or 0)
        self.assigned = {name: index for index, name in enumerate(names)} if fits else {}

    def slot_for(self, agent: str) -> int | None:
        """The agent's slot, a free one for an agent not planned, None when no slot is named."""
        if not self.assigned or not self.total:
            return None
        if agent not in self.assigned and len(self.assigned) < self.total:
            self.assigned[agent] = len(self.assigned)
        return self.assigned.get(agent)
