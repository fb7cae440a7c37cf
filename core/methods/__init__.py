"""One module per method: DyTopo and the papers' baselines, TopoDIM, DMoA, TopoWeaver-R1.

Each module registers itself in ``core.methods.registry``; the engine hosts any of them the same way.
"""

from core.methods.registry import (
    MethodError,
    MethodInfo,
    OptionSpec,
    build_method,
    get_method_info,
    method_names,
    parse_option_flags,
)

__all__ = [
    "MethodError",
    "MethodInfo",
    "OptionSpec",
    "build_method",
    "get_method_info",
    "method_names",
    "parse_option_flags",
]
