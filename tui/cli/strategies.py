"""``swarm-tui strategies``: every method the engine can host, one line each, with its options."""

from __future__ import annotations

from collections.abc import Sequence

from core.methods.catalogue import get_method_info, load_error, method_names
from core.methods.fidelity import fidelity_text
from core.methods.registry import MethodError

from .options import OneLineParser


def describe_methods() -> str:
    lines = []
    names = method_names()
    width = max(len(n) for n in names)
    for name in names:
        try:
            info = get_method_info(name)
        except MethodError:  # a plugin that does not import: its one line, and the others still listed
            lines.append(f"{name:<{width}}  NOT AVAILABLE: {load_error(name)}")
            continue
        lines.append(f"{name:<{width}}  {info.summary}")
        steps = f"steps by {info.unit}" + (f" / {info.substep}" if info.substep else "")
        extras = [steps]
        if info.uses_tau:
            extras.append("uses tau and k_in")
        if info.what_if:
            extras.append("what-if re-routing")
        lines.append(f"{'':<{width}}  ({'; '.join(extras)})")
        kinds = []
        for spec in info.options:
            if not spec.call_table:
                lines.append(f"{'':<{width}}    -o {spec.describe()}")
            elif spec.name.endswith("_max_tokens"):
                kinds.append(f"{spec.name.removesuffix('_max_tokens')} [{spec.call_table}]")
        if kinds:  # each call kind's two options, on one line
            lines.append(f"{'':<{width}}    -o KIND_max_tokens=N, -o KIND_temperature=T (unset: the config table): "
                         + ", ".join(kinds))
    lines.append("")
    lines.append("Choose one with --strategy NAME; set options with -o KEY=VALUE or a [strategy.NAME] table.")
    lines.append("Where a method departs from its paper, and how to restore the paper: --fidelity.")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    parser = OneLineParser(prog="swarm-tui strategies", description="List the methods that can wire a team.")
    parser.add_argument(
        "--fidelity", action="store_true",
        help="list every known departure from the papers, method by method, with the reason and the option "
        "that restores the paper",
    )
    args = parser.parse_args(list(argv))
    print(fidelity_text() if args.fidelity else describe_methods())
    return 0
