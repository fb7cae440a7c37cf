"""The request ``seed`` of the model calls made in the current context.

A benchmark repeat sets it for its run (servers that honour ``seed`` then sample reproducibly). A context
variable, so concurrent runs sharing one client each send their own seed without threading it through
every method. Its own module: methods read it without importing the openai SDK (slow to import).
"""

from __future__ import annotations

from contextvars import ContextVar

REQUEST_SEED: ContextVar[int | None] = ContextVar("swarm_request_seed", default=None)
