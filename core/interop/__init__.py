"""Runs that leave the app: every method as an inspect_ai solver (``swarm_tui/swarm``) and a session as an
inspect eval log. Faces like the MCP server and the benchmark: they start runs through core.compose.

Every module but this one needs the ``inspect`` extra (``pip install 'swarm-tui[inspect]'``);
``INSTALL_HINT`` says so in one line where it is missing.
"""

from __future__ import annotations

import importlib.util

INSTALL_HINT = "this needs the inspect extra: pip install 'swarm-tui[inspect]'"


def inspect_installed() -> bool:
    return importlib.util.find_spec("inspect_ai") is not None
