"""The work of one DyTopo round (arXiv 2602.06039) and the workers' memory at its end (§3.1, eq. 3):

* broadcast (the reference's phased protocol, round 1): every worker works on the first goal; every output goes
  to every worker;
* phased (the reference, rounds >= 2): A) descriptors in parallel, B) routing, C) work in topological tiers
  (§3.4, eq. 10-11), each tier receiving its in-neighbours' messages of this round;
* single-pass (the paper, Algorithm 1): one call per worker gives work and descriptors together; routing after
  the barrier; routed messages enter the recipients' memory for the next round, strongest first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.methods.dytopo import deliveries as deliver
from core.methods.dytopo.calls import DyTopoCalls
from core.methods.dytopo.deliveries import Delivery, render_inbox
from core.methods.dytopo.router import DescriptorRouter
from core.methods.dytopo.steer import DyTopoSteering, join_inbox
from core.routing.dytopo import RoutingResult
from core.runtime import events as ev
from core.runtime.control import StepBoundary
from core.runtime.engine import AgentResult
from core.runtime.memory import MemoryItem
from core.runtime.run_context import start_phase

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext

Results = dict[str, AgentResult]


class RoundWork:
    """A round's worker calls, deliveries and memory, over one run's calls, steering and router."""

    def __init__(self, ctx: RunContext, calls: DyTopoCalls, steer: DyTopoSteering, router: DescriptorRouter,
                 payload: str) -> None:
        self.ctx = ctx
        self.calls = calls
        self.steer = steer
        self.router = router
        self.payload = payload  # core.methods.dytopo.deliveries PAYLOADS (auto resolved)

    async def broadcast_round(self, goal: str) -> Results:
        """Round 1: every worker works on the first goal; every output goes to every worker."""
        start_phase(self.ctx, ev.Phase.WORK, "all workers, broadcast")
        active = self.steer.active(self.ctx.spec.workers)
        results = await self.ctx.gather({name: self._worker(name, ev.CallKind.WORK, goal, tier=0) for name in active})
        deliveries = deliver.broadcast(active, results, self.payload)
        self.ctx.emit(ev.MessagesRouted(round=self.ctx.state.round, deliveries=deliveries, broadcast=True))
        for name in active:
            self.calls.remember(name, MemoryItem(self.ctx.state.round, "own", name, results[name].public))
        for d in deliveries:
            self.calls.remember(d["dst"], MemoryItem(self.ctx.state.round, "broadcast", d["src"], d["content"]))
        return results

    async def phased_round(self, goal: str) -> Results:
        """Rounds >= 2 of the reference's phased protocol: A) descriptors, B) routing, C) work in tiers."""
        start_phase(self.ctx, ev.Phase.DESCRIPTORS, "phase A: every worker states its need and offer")
        active = self.steer.active(self.ctx.spec.workers)
        descriptors = await self.ctx.gather(
            {name: self._described_call(name, ev.CallKind.DESCRIPTORS, goal) for name in active}
        )
        self._descriptors_ready(descriptors)
        await self.ctx.checkpoint(StepBoundary.PHASE)
        self.router.route()
        self.router.can_reroute = True
        await self.ctx.checkpoint(StepBoundary.PHASE)
        self.router.can_reroute = False
        routing = self.router.routing
        assert routing is not None
        start_phase(self.ctx, ev.Phase.WORK, f"phase C: {len(routing.tiers)} tiers")
        results: Results = {}
        received: dict[str, list[Delivery]] = {name: [] for name in self.ctx.spec.workers}
        for tier_index, whole_tier in enumerate(routing.tiers):
            # Silenced agents (routing.inactive) have no call; the graph was rebuilt if one was silenced late.
            tier = [name for name in whole_tier if name not in routing.inactive and name in descriptors]
            deliveries = deliver.to_tier(routing, tier, results, self.payload)
            if deliveries:
                self.ctx.emit(ev.MessagesRouted(round=self.ctx.state.round, deliveries=deliveries))
            for d in deliveries:
                received[d["dst"]].append(d)
            # A work reply may carry fresh descriptors; the phase-A ones stay the round's record.
            results.update(await self.ctx.gather({
                name: self._worker(name, ev.CallKind.WORK, goal, inbox=render_inbox(received[name]), tier=tier_index,
                                   inbox_from=frozenset(d["src"] for d in received[name]))
                for name in tier
            }))
        self._remember_phased(routing, results, received)
        return results

    def _remember_phased(self, routing: RoutingResult, results: Results, received: dict[str, list[Delivery]]
                         ) -> None:
        """A phased round's memory: each worker's output and what it received; edges whose provider did not run
        in an earlier tier (a wiring rule that keeps cycles, e.g. broadcast) deliver at the barrier, into next
        round's memory, as in the single-pass protocol."""
        late = deliver.late(routing, received, results, self.payload)
        round_no = self.ctx.state.round
        if late:
            self.ctx.emit(ev.MessagesRouted(round=round_no, deliveries=late))
        for name in results:
            self.calls.remember(name, MemoryItem(round_no, "own", name, results[name].public))
            for d in received[name]:
                self.calls.remember(name, MemoryItem(round_no, "routed", d["src"], d["content"], d["score"]))
        for d in sorted(late, key=lambda d: (d["dst"], -d["score"], d["src"])):
            self.calls.remember(d["dst"], MemoryItem(round_no, "routed", d["src"], d["content"], d["score"]))

    async def single_pass_round(self, goal: str) -> Results:
        """Algorithm 1's round: work and descriptors in one call each, routing after the barrier."""
        start_phase(self.ctx, ev.Phase.WORK, "single pass: work and descriptors together")
        results = await self.ctx.gather(
            {name: self._described_call(name, ev.CallKind.SINGLE_PASS, goal)
             for name in self.steer.active(self.ctx.spec.workers)}
        )
        self._descriptors_ready(results)
        await self.ctx.checkpoint(StepBoundary.PHASE)
        results = await self.steer.redo_outputs(results, ev.CallKind.SINGLE_PASS)  # retried before it is routed
        self.router.route()
        routing = self.router.routing
        assert routing is not None
        # Barrier semantics (paper eq. 3): messages enter next round's memory, strongest first.
        deliveries = deliver.at_barrier(routing, results, self.payload)
        self.ctx.emit(ev.MessagesRouted(round=self.ctx.state.round, deliveries=deliveries))
        for name in results:
            self.calls.remember(name, MemoryItem(self.ctx.state.round, "own", name, results[name].public))
        round_no = self.ctx.state.round
        for d in deliveries:
            self.calls.remember(d["dst"], MemoryItem(round_no, "routed", d["src"], d["content"], d["score"]))
        return results

    def _descriptors_ready(self, results: Results) -> None:
        self.ctx.emit(
            ev.DescriptorsReady(
                round=self.ctx.state.round,
                descriptors={n: {"query": r.query, "key": r.key} for n, r in results.items()},
            )
        )

    async def _described_call(self, name: str, call: str, goal: str) -> AgentResult:
        """A call whose reply carries descriptors, embedded as soon as the reply is in (DescriptorRouter.embed)."""
        result = await self._worker(name, call, goal)
        await self.router.embed(name, result)
        return result

    async def _worker(
        self, name: str, call: str, goal: str, *, inbox: str = "", tier: int | None = None,
        inbox_from: frozenset[str] = frozenset(),
    ) -> AgentResult:
        """A worker's call, with the user's notes first in its inbox (core.methods.dytopo.steer)."""
        return await self.steer.call(name, lambda notes: self.calls.worker_call(
            name, call, goal, inbox=join_inbox(notes, inbox), tier=tier, inbox_from=inbox_from))
