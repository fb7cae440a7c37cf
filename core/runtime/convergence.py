"""How much a worker's output changed between rounds (the convergence test)."""

from __future__ import annotations

import difflib


def text_similarity(before: str, after: str) -> float:
    """difflib's ratio of matching characters, 0..1; 1.0 means unchanged. Whitespace runs are folded
    so re-wrapping the same text does not count as change."""
    a = " ".join(before.split())
    b = " ".join(after.split())
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
