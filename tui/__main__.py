"""``python -m tui``: the same as the ``swarm-tui`` command (handy in a checkout without the script)."""

from tui.entry import entry

entry()
