"""The baselines' fixed wiring rules by name."""

from __future__ import annotations

from core.routing.wiring import (
    WIRINGS,
    BroadcastWiring,
    ChainWiring,
    DyTopoWiring,
    RandomWiring,
    StarWiring,
    WiringRule,
)


def get_wiring(name: str, *, hub: str | None = None, seed: int = 0) -> WiringRule:
    """A wiring rule by its name, as the baselines' tests pick one."""
    if name == "dytopo":
        return DyTopoWiring()
    if name == "random":
        return RandomWiring(seed)
    if name == "broadcast":
        return BroadcastWiring()
    if name == "chain":
        return ChainWiring()
    if name == "star":
        return StarWiring(hub)
    raise ValueError(f"unknown wiring rule {name!r}: choose one of {', '.join(WIRINGS)}")
