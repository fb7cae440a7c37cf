"""DyTopo (arXiv 2602.06039) and the graph baselines that run its rounds.

``protocol``: the round loop and the method's options and registration; ``rounds``: a round's work (broadcast,
phased tiers, single pass) and memory; ``deliveries``: what travels along an edge; ``router``: descriptor
embedding and routing; ``manager``: the Manager's plan and review; ``convergence``: the convergence check;
``calls``: a worker's and the Manager's calls and the workers' memory.
Importing the package registers the method (core.methods.catalogue imports it by this name).
"""

from core.methods.dytopo.protocol import CALL_OPTIONS, DyTopoMethod, memory_option, prompt_order_option

__all__ = ["CALL_OPTIONS", "DyTopoMethod", "memory_option", "prompt_order_option"]
