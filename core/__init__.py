"""Headless swarm engine: no Textual imports allowed in this package."""

__version__ = "0.1.0"
