"""DyTopo's descriptor routing (arXiv 2602.06039, §3.3-3.4, eq. 4-9): each worker's query and key descriptors
are embedded as soon as its reply is in (MiniLM), and after the barrier the similarity matrix of queries
against keys and the wiring rule (tau, k_in; a baseline's own graph) decide who hears whom this round. A user's
new tau/k_in, pin, cut or silence taken between routing and work rebuilds the graph at once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)
from core.methods.dytopo.steer import DyTopoSteering
from core.routing.dytopo import RoutingResult, similarity_matrix
from core.routing.wiring import DyTopoWiring, WiringRule
from core.runtime import events as ev
from core.runtime.engine import AgentResult
from core.runtime.run_context import notice, start_phase

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext


class DescriptorRouter:
    """One run's descriptor vectors, similarity matrix and current graph (``routing``)."""

    def __init__(self, ctx: RunContext, graph: WiringRule, steer: DyTopoSteering, *, acyclic: bool) -> None:
        self.ctx = ctx
        self.graph = graph
        self.steer = steer
        self.acyclic = acyclic  # phased work runs in tiers, so its graph must be acyclic
        self.routing: RoutingResult | None = None
        self.can_reroute = False  # between phase B and phase C of a phased round
        self._similarity: np.ndarray | None = None  # current round's, for re-routing
        self._descriptor_vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # embedded on arrival
        self._embeddings: tuple[list[list[float]], list[list[float]]] | None = None

    async def embed(self, name: str, result: AgentResult) -> None:
        """A reply's descriptors, embedded while the other agents are still answering (eq. 4-5), so routing
        after the barrier has no model work left."""
        if not (result.query or result.key):  # a copied reply template states nothing: no similarity, no edges
            return
        vectors = await self.ctx.embed([result.query, result.key])
        self._descriptor_vectors[name] = (vectors[0], vectors[1])

    def route(self) -> None:
        """Phase B, from the descriptors embedded as each reply arrived (eq. 6: cosine of query and key)."""
        start_phase(self.ctx, ev.Phase.ROUTING, "phase B: build the graph from the embedded descriptors")
        # A silenced agent, or one that copied the reply template, stated nothing: zero vectors (no similarity).
        if not self._descriptor_vectors:
            notice(self.ctx, "no agent stated its own needs and offers this round: nothing is routed", "warning")
        stated = list(self._descriptor_vectors.values())
        # Nobody stated anything: every vector is a zero one, so their length is anybody's (no similarity).
        blank = np.zeros_like(stated[0][0]) if stated else np.zeros(1, dtype=np.float32)
        vectors = [self._descriptor_vectors.get(name, (blank, blank)) for name in self.ctx.spec.workers]
        q = np.asarray([v[0] for v in vectors])
        k = np.asarray([v[1] for v in vectors])
        self._descriptor_vectors = {}
        self._similarity = similarity_matrix(q, k)
        self._embeddings = (q.tolist(), k.tolist())
        self._build_graph(rerouted=False)

    def _build_graph(self, *, rerouted: bool) -> None:
        """The wiring rule over this round's similarity (eq. 7-9: tau, k_in; pins, cuts, silenced agents)."""
        assert self._similarity is not None and self._embeddings is not None
        params = self.ctx.state.params
        round_no = self.ctx.state.round
        workers = list(self.ctx.spec.workers)
        pinned, cut, silenced = self.steer.graph_sets(round_no)
        if isinstance(self.graph, DyTopoWiring):
            routing = self.graph.build(round_no, workers, self._similarity, params.tau, params.k_in,
                                       break_cycles=self.acyclic, pinned=pinned, cut=cut, silenced=silenced)
        else:  # a baseline's own graph: no pins or cuts, but a silenced agent has no edges there either
            routing = self.steer.without_silenced(self.graph.build(
                round_no, workers, self._similarity, params.tau, params.k_in, break_cycles=self.acyclic))
        self.routing = routing
        self.ctx.emit(
            ev.TopologyBuilt(
                round=round_no,
                routing=routing.to_dict(),
                query_embeddings=self._embeddings[0],
                key_embeddings=self._embeddings[1],
                strategy=self.graph.name,
                rerouted=rerouted,
            )
        )

    def reroute_on_steer(self) -> bool:
        """A pin, cut or silence taken between routing and work rebuilds this round's graph at once."""
        if not self.can_reroute or self._similarity is None:
            return False
        self._build_graph(rerouted=True)
        return True

    def reroute_now(self) -> bool:
        """New tau/k_in from the user: the graph is rebuilt now if this round's work has not started, else the
        user is told when the values apply."""
        if not self.can_reroute or self._similarity is None:
            state = self.ctx.state
            if state.round <= 1 and state.phase != ev.Phase.MANAGER and self.acyclic:
                why = "round 1 is a broadcast: the new values apply at round 2's routing"
            elif state.phase in (ev.Phase.PLAN, ev.Phase.DESCRIPTORS):
                why = "this round's graph is not built yet: the new values apply when it is"
            else:
                why = "this round's work has already started: the new values apply at the next routing"
            notice(self.ctx, why, "info")
            return False
        self._build_graph(rerouted=True)
        return True
