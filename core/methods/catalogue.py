"""Every method, by name: found through the ``swarm_tui.methods`` entry-point group, built-ins and plugins alike.

``--strategy``, the launch form, ``swarm-tui strategies``, the benchmark runner, the MCP server and the
session reader (a method's own event types) look methods up here. Each entry point names a MethodInfo
(``dytopo = "core.methods.dytopo.protocol:DYTOPO"`` in pyproject.toml; a plugin's own pyproject does the
same). A method's module is imported when that method is first asked for, so a run loads only its own
method before its first request (bench/first_request.py); ``load_all`` imports every one (to list them all,
or to read any session). A plugin that fails to import is kept with its one-line error (``load_error``):
listed, refused with that line when chosen, and never in the way of another method.

Tests register a method of their own with ``core.methods.registry.register`` (the test hook): a name
registered in this process is a method here too, listed after the installed ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from contextlib import suppress
from functools import cache
from typing import Any

from core.methods.registry import MethodError, MethodInfo, register, registered
from core.runtime.engine import Method
from core.runtime.events import event_types
from core.runtime.rosters import Team
from core.runtime.steering import SteerKind

GROUP = "swarm_tui.methods"  # the entry-point group a method package declares itself in
DISTRIBUTION = "swarm-tui"  # the app's own methods: listed first

# The built-ins' entry points in the order they are listed (installed metadata sorts them by name), and what an
# install whose metadata predates the group uses (an editable install made before pyproject.toml declared it:
# `pip install -e .` again brings the declared ones).
_BUILTIN = {
    "dytopo": "core.methods.dytopo.protocol:DYTOPO",
    "single": "core.methods.baselines.method:SINGLE",
    "single-turn": "core.methods.baselines.method:SINGLE_TURN",
    "random": "core.methods.baselines.method:RANDOM",
    "broadcast": "core.methods.baselines.method:BROADCAST",
    "chain": "core.methods.baselines.method:CHAIN",
    "star": "core.methods.baselines.method:STAR",
    "topodim": "core.methods.topodim.method:TOPODIM",
    "dmoa": "core.methods.dmoa.method:DMOA",
    "topoweaver": "core.methods.topoweaver.method:TOPOWEAVER",
}


@cache
def installed() -> dict[str, str]:
    """The group's entry points by name (-> "module:attribute"): the app's own first (in their listed order),
    then plugins by name."""
    # importlib.metadata (with email, zipfile, csv) is imported here, when the methods are listed, not when
    # a built-in is looked up: a run of one of them never waits for it before its first request.
    from importlib.metadata import entry_points

    found = list(entry_points(group=GROUP))
    rank = {name: at for at, name in enumerate(_BUILTIN)}
    own = sorted((ep for ep in found if ep.dist is not None and ep.dist.name == DISTRIBUTION),
                 key=lambda ep: (rank.get(ep.name, len(rank)), ep.name))
    others = sorted((ep for ep in found if ep not in own), key=lambda ep: ep.name)
    table = {ep.name: ep.value for ep in own} or dict(_BUILTIN)  # no own entry points: see _BUILTIN
    for ep in others:
        table.setdefault(ep.name, ep.value)
    return table


def own_method_names() -> list[str]:
    """The app's own methods (its pyproject's entry points), without plugins: what its docs describe."""
    return list(_BUILTIN)


_errors: dict[str, str] = {}  # a method whose entry point failed to load -> its one-line error


def method_names() -> list[str]:
    """Every method: the app's own (DyTopo and its baselines first, then the other methods), installed plugins,
    then any registered in this process only (a test's)."""
    names = list(installed())
    return names + [name for name in registered() if name not in names]


def load_error(name: str) -> str:
    """Why method ``name`` could not be loaded ("" when it loads, or was not tried yet)."""
    return _errors.get(name, "")


def _load(name: str) -> MethodInfo:
    """The entry point's MethodInfo, registered (importing its module registers it, or this does); a module
    that fails to import, or names no MethodInfo, becomes a MethodError with one line."""
    if name in _errors:
        raise MethodError(f"method {name!r} could not be loaded: {_errors[name]}")
    # A built-in's entry point is the one its pyproject declares: loaded without scanning every installed
    # distribution's metadata (what a run would wait for before its first request: bench/first_request.py).
    value = _BUILTIN[name] if name in _BUILTIN else installed()[name]
    module, _, attribute = value.split("[")[0].strip().partition(":")  # "module:object" (an extras list aside)
    try:
        info: Any = importlib.import_module(module)
        for part in attribute.split(".") if attribute else ():
            info = getattr(info, part)
    except Exception as exc:  # a plugin's import error must not reach the user as a traceback
        _errors[name] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
        raise MethodError(f"method {name!r} could not be loaded: {_errors[name]}") from None
    if not isinstance(info, MethodInfo) or info.name != name:
        _errors[name] = f"{value} is not the MethodInfo of {name!r}"
        raise MethodError(f"method {name!r} could not be loaded: {_errors[name]}")
    if registered().get(name) is not info:
        register(info)
    return info


def load_all() -> None:
    """Load every installed method (each registers itself and its own event types); cheap once done. One that
    fails is left out, with its error kept for ``swarm-tui strategies``."""
    global _all_loaded
    if not _all_loaded:
        for name in installed():
            if name not in registered():
                with suppress(MethodError):  # kept in _errors, listed by `swarm-tui strategies`
                    _load(name)
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
    info = registered().get(name)
    if info is not None:
        return info
    if name not in _BUILTIN and name not in installed():
        raise MethodError(f"unknown strategy {name!r}: choose one of {', '.join(method_names())}")
    return _load(name)


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


def unit_count(strategy: str, count: int) -> str:
    """``count`` of the method's units, in words: "3 rounds", "1 step", "2 turns" (rounds for a method this version
    does not know)."""
    try:
        unit = get_method_info(strategy).unit
    except MethodError:
        unit = "round"
    return f"{count} {unit}{'' if count == 1 else 's'}"


def build_method(name: str, options: Mapping[str, Any] | None, team: Team) -> Method:
    """A fresh method for one run, its options checked (MethodError, one line, if not). The resolved
    options, defaults included, ride on the method as ``options``: the run records them (RunStarted)."""
    info = get_method_info(name)
    values = info.resolve(options)
    method = info.factory(values, team)
    method.options = dict(values)  # type: ignore[attr-defined]
    return method
