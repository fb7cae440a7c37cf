"""Where the random-graph baseline departs from its paper.

core.methods.fidelity collects every method's list (MethodInfo.fidelity).
"""

from __future__ import annotations

from core.methods.registry import Deviation

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "random",
        "The random baseline draws an acyclic graph with as many edges as DyTopo chose that round.",
        "A fair random control needs the same density; the paper does not say how its random graphs are drawn.",
    ),
)
