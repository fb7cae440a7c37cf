"""Every built-in method, by name: the one place that knows which module registers which method.

``--strategy``, the launch form, ``swarm-tui strategies``, the benchmark runner, the MCP server and the
session reader (a method's own event types) look methods up here. A method's module is imported when that
method is first asked for, so a run loads only its own method before its first request
(bench/first_request.py); ``load_all`` imports every one (to list them all, or to read any session).
Adding a method means a module that calls ``register`` plus one line in MODULES.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from core.methods.registry import MethodError, MethodInfo, registered
from core.runtime.domains import Domain
from core.runtime.engine import Method
from core.runtime.events import event_types
from core.runtime.steering import SteerKind

# name -> the module that registers it, in the order `swarm-tui strategies` lists them.
MODULES: dict[str, str] = {
    "dytopo": "core.methods.dytopo",
    "single": "core.methods.baselines.method",
    "single-turn": "core.methods.baselines.method",
    "random": "core.methods.baselines.method",
    "broadcast": "core.methods.baselines.method",
    "chain": "core.methods.baselines.method",
    "star": "core.methods.baselines.method",
    "topodim": "core.methods.topodim.method",
    "dmoa": "core.methods.dmoa.method",
    "topoweaver": "core.methods.topoweaver.method",
}


def method_names() -> list[str]:
    """DyTopo and its baselines first, then the other methods."""
    return list(MODULES)


def load_all() -> None:
    """Import every method module (each registers itself and its own event types); cheap once done."""
    global _all_loaded
    if not _all_loaded:
        for module in dict.fromkeys(MODULES.values()):
            importlib.import_module(module)
        _all_loaded = True


_all_loaded = False


def ensure_event_type(kind: object) -> None:
    """Before an event dict is rebuilt: a type not registered yet belongs to a method not imported so far
    (a session of another method), so every method is imported then, and only then. A live run has its
    own method's types already and loads no other method."""
    if isinstance(kind, str) and kind not in event_types():
        load_all()


def option_schemas() -> dict[str, dict[str, Any]]:
    """Each method's options model as JSON Schema, by name (MCP's tool schema publishes them)."""
    load_all()
    return {name: info.options_model.model_json_schema() for name, info in registered().items()}


def get_method_info(name: str) -> MethodInfo:
    module = MODULES.get(name)
    if module is None:
        raise MethodError(f"unknown strategy {name!r}: choose one of {', '.join(method_names())}")
    importlib.import_module(module)
    return registered()[name]


def unit_position(strategy: str, current: int, max_rounds: int) -> str:
    """MethodInfo.position; a session of a method this version does not know counts rounds of max_rounds."""
    try:
        return get_method_info(strategy).position(current, max_rounds)
    except MethodError:
        return f"round {current}/{max_rounds}" if max_rounds else f"round {current}"


def steering_of(name: str) -> frozenset[SteerKind]:
    """The steering actions a method takes (MethodInfo.steering); none for a method this version lacks."""
    try:
        return get_method_info(name).steering
    except MethodError:
        return frozenset()


def steering_refusal(name: str, kind: SteerKind | str) -> str:
    """One line: why method ``name`` does not take ``kind``; "" when it does."""
    try:
        return get_method_info(name).why_not(kind)
    except MethodError as exc:
        return str(exc)


def unit_count(strategy: str, count: int) -> str:
    """``count`` of the method's units, in words: "3 rounds", "1 step", "2 turns" (rounds for a method this version
    does not know)."""
    try:
        unit = get_method_info(strategy).unit
    except MethodError:
        unit = "round"
    return f"{count} {unit}{'' if count == 1 else 's'}"


def build_method(name: str, options: Mapping[str, Any] | None, domain: Domain) -> Method:
    """A fresh method for one run, its options checked (MethodError, one line, if not). The resolved
    options, defaults included, ride on the method as ``options``: the run records them (RunStarted)."""
    info = get_method_info(name)
    values = info.resolve(options)
    method = info.factory(values, domain)
    method.options = dict(values)  # type: ignore[attr-defined]
    return method
