"""Spectating: a read-only view of a run (``swarm-tui serve --spectate``), for showing a run to others.

Every key of the run screen that changes the run is refused with one line (step, pause, auto-run, tau, k_in,
re-route, cancel, steering, and the keys that read or write files on the machine serving the page: save,
open, fork); the keys that only change what is shown (browse rounds, the matrix, removed edges, the inbox,
search, copy, help, quit, and a replay's stepping and playing) work as usual. The served process learns it
from the environment, because textual-serve starts it from a command line for each browser that connects.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .bindings import REPLAY_BINDINGS, RUN_BINDINGS
from .cli.serve import SPECTATE_ENV

REFUSAL = "spectating: this view cannot change the run (step, tau, k_in, steering and cancel are off)"

# What a spectator may do: look. Everything else the run and replay screens bind is refused, so a key added
# to those screens later (a steering key) is refused until it is listed here.
VIEW_ACTIONS = frozenset({
    "browse", "toggle_matrix", "toggle_removed", "toggle_problem", "toggle_maximize", "copy", "inbox", "search",
    "search_step", "help", "request_quit", "quit", "back",
})


def action_name(action: str) -> str:
    return action.split("(", 1)[0].rsplit(".", 1)[-1]


REFUSED = frozenset(action_name(b.action) for b in [*RUN_BINDINGS, *REPLAY_BINDINGS]) - VIEW_ACTIONS
# A replay's stepping and playing move through a recorded run without changing it: a spectator may.
REPLAY_VIEW = frozenset({"step_phase", "back_phase", "step_round", "back_round", "toggle_pause", "speed", "jump"})


def spectating(environ: Mapping[str, str] | None = None) -> bool:
    return (os.environ if environ is None else environ).get(SPECTATE_ENV) == "1"


def refused(action: str, *, replay: bool = False) -> bool:
    """Whether a spectator's key for this action is refused (on a replay screen, when ``replay``)."""
    name = action_name(action)
    return name in REFUSED and not (replay and name in REPLAY_VIEW)
