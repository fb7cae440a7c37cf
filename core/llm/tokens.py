"""Token estimates for servers that report no usage (a module of its own: the run's memory needs it
without loading the openai SDK)."""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    """Rough token count (about 4 characters a token) for servers that report no usage."""
    return max(1, len(text) // 4) if text else 0
