"""Every built-in method, loaded: the one module that imports them all so that they register.

``--strategy``, the launch form, ``swarm-tui strategies``, the benchmark runner, the MCP server and the
session reader (a method's own event types) look methods up here; a method module imports only the
registry, so adding a method means a module plus one line below.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import core.methods.baselines
import core.methods.dmoa
import core.methods.dytopo
import core.methods.topodim
import core.methods.topoweaver  # noqa: F401  (each registers itself)
from core.methods.registry import MethodError, MethodInfo, registered
from core.runtime.domains import Domain
from core.runtime.engine import Method

_FIRST = ("dytopo", "single", "single-turn", "random", "broadcast", "chain", "star")


def method_names() -> list[str]:
    """DyTopo and its baselines first, then the other methods in the order they registered."""
    return sorted(registered(), key=lambda name: _FIRST.index(name) if name in _FIRST else len(_FIRST))


def get_method_info(name: str) -> MethodInfo:
    info = registered().get(name)
    if info is None:
        raise MethodError(f"unknown strategy {name!r}: choose one of {', '.join(method_names())}")
    return info


def build_method(name: str, options: Mapping[str, Any] | None, domain: Domain) -> Method:
    """A fresh method for one run, its options checked (MethodError, one line, if not). The resolved
    options, defaults included, ride on the method as ``options``: the run records them (RunStarted)."""
    info = get_method_info(name)
    values = info.resolve(options)
    method = info.factory(values, domain)
    method.options = dict(values)  # type: ignore[attr-defined]
    return method
