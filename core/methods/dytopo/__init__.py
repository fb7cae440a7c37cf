"""DyTopo (arXiv 2602.06039) and the graph baselines that run its rounds.

``protocol``: the round loop (the Manager's goal, descriptors, routing, work in tiers or in one pass) and
the method's registration; ``calls``: a worker's and the Manager's calls and the workers' memory.
Importing the package registers the method (core.methods.catalogue imports it by this name).
"""

from core.methods.dytopo.protocol import CALL_OPTIONS, DyTopoMethod, memory_option, prompt_order_option

__all__ = ["CALL_OPTIONS", "DyTopoMethod", "memory_option", "prompt_order_option"]
