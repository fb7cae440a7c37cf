"""Example sessions shipped with swarm-tui (made with ``--demo``), and the default save place."""

from pathlib import Path

EXAMPLES_DIR = Path(__file__).parent
