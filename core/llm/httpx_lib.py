"""The HTTP library the openai SDK sends with: its httpx2 fork where installed, else httpx. One place for the
choice, so every module of core.llm catches and builds the same library's types."""

from __future__ import annotations

try:  # the openai SDK moved to the httpx2 fork; older releases use httpx
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx  # type: ignore[no-redef]

__all__ = ["httpx"]
