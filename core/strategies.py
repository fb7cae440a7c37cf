"""Topology strategies: where a round's graph comes from. DyTopo is the default; benchmark baselines
(random, broadcast, chain, star) and later topology methods plug in here with the same signature."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .routing import RoutingResult, route_from_similarity


class TopologyStrategy(Protocol):
    name: str

    def build(
        self, round_no: int, names: list[str], similarity: np.ndarray, tau: float, k_in: int, *, break_cycles: bool
    ) -> RoutingResult: ...


class DyTopoStrategy:
    """Semantic matching of query and key descriptors against tau, capped at k_in (the paper)."""

    name = "dytopo"

    def build(
        self, round_no: int, names: list[str], similarity: np.ndarray, tau: float, k_in: int, *, break_cycles: bool
    ) -> RoutingResult:
        return route_from_similarity(names, similarity, tau, k_in, break_cycles=break_cycles)


STRATEGIES: dict[str, type] = {"dytopo": DyTopoStrategy}


def get_strategy(name: str) -> TopologyStrategy:
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}: choose one of {', '.join(STRATEGIES)}") from None
