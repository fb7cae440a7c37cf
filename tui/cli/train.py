"""``swarm-tui train METHOD DATASET``: train a method's learned part against the configured endpoint.

Each trainable method has its own module ``tui.cli.train_<method>`` with ``main(argv) -> int``; this one
only dispatches, so the methods' trainers stay independent of each other.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

TRAINERS = {
    "topodim": "tui.cli.train_topodim",  # the R-GCN edge generator (REINFORCE, TopoDIM eq. 10-12)
    "dmoa": "tui.cli.train_dmoa",  # the GRU router (ranking loss on predictive entropy, DMoA eq. 13-15)
}


def main(argv: Sequence[str]) -> int:
    argv = list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: swarm-tui train {{{','.join(TRAINERS)}}} DATASET [options]  (each has --help)")
        return 0 if argv else 2
    method, rest = argv[0], argv[1:]
    module_name = TRAINERS.get(method)
    if module_name is None:
        print(
            f"swarm-tui train: error: {method!r} has nothing to train: choose one of {', '.join(TRAINERS)}",
            file=sys.stderr,
        )
        return 2
    module = importlib.import_module(module_name)
    return int(module.main(rest))
