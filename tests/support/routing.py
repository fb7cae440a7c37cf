"""The baselines' fixed graph strategies by name."""

from __future__ import annotations

from core.routing.strategies import (
    GRAPH_STRATEGIES,
    BroadcastStrategy,
    ChainStrategy,
    DyTopoStrategy,
    RandomStrategy,
    StarStrategy,
    TopologyStrategy,
)


def get_strategy(name: str, *, hub: str | None = None, seed: int = 0) -> TopologyStrategy:
    """A graph strategy by its name, as the baselines' tests pick one."""
    if name == "dytopo":
        return DyTopoStrategy()
    if name == "random":
        return RandomStrategy(seed)
    if name == "broadcast":
        return BroadcastStrategy()
    if name == "chain":
        return ChainStrategy()
    if name == "star":
        return StarStrategy(hub)
    raise ValueError(f"unknown topology strategy {name!r}: choose one of {', '.join(GRAPH_STRATEGIES)}")
