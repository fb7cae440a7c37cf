"""Which methods a comparison or a benchmark runs, and their options: ``dytopo,dmoa`` or ``all``, and
``-o key=value`` (every chosen method that has it) or ``-o method.key=value`` (that one)."""

from __future__ import annotations

from collections.abc import Sequence

from core.methods.catalogue import get_method_info, method_names
from core.methods.registry import MethodError, parse_option_flags


def parse_strategies(text: str) -> list[str]:
    """``dytopo,single`` -> ["dytopo", "single"]; ``all`` -> every strategy. ValueError with one line."""
    known = method_names()
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return known
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        what = ", ".join(unknown) or "(none)"
        raise ValueError(f"unknown strategy {what}: choose from {', '.join(known)} or all")
    return list(dict.fromkeys(names))


def split_option_flags(flags: Sequence[str], strategies: Sequence[str]) -> dict[str, dict[str, str]]:
    """``-o key=value`` (every chosen method that has the option) and ``-o method.key=value`` (that one)
    as options per strategy, each checked by its method. ValueError with one line."""
    out: dict[str, dict[str, str]] = {s: {} for s in strategies}
    for key, value in parse_option_flags(list(flags)).items():
        method, dot, name = key.partition(".")
        if dot:
            if method not in out:
                chosen = ", ".join(strategies)
                raise ValueError(f"-o {key}={value}: {method} is not among the strategies run ({chosen})")
            targets = [(method, name)]
        else:
            targets = [(s, key) for s in strategies if any(o.name == key for o in get_method_info(s).options)]
            if not targets:
                raise ValueError(f"-o {key}={value}: no chosen strategy has an option {key!r} (swarm-tui strategies)")
        for strategy, option in targets:
            out[strategy][option] = value
    try:
        for strategy, given in out.items():
            get_method_info(strategy).resolve(given)
    except MethodError as exc:
        raise ValueError(str(exc)) from None
    return {s: given for s, given in out.items() if given}
