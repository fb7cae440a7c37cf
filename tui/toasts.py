"""How many toasts the app shows at once: a repeat of a notice still shown replaces it (with a count and a fresh
timeout), and at most MAX_TOASTS show, the least severe and oldest making room first, so toasts never pile up
over the panes."""

from __future__ import annotations

from textual.notifications import Notification

MAX_TOASTS = 3  # notices shown at once; older ones make room (errors last)
_SEVERITY_RANK = {"information": 0, "warning": 1, "error": 2}


class ToastLimit:
    """Counts the repeats of each notice shown and says which toasts give way (the app removes them)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}  # notification identity -> how many times it was said

    def repeats_of(self, new: Notification, shown: list[Notification]) -> list[Notification]:
        """The toasts ``new`` repeats (same text and severity): ``new`` takes their count, plus one, in its
        title; the caller removes them."""
        same = [n for n in shown if (n.message, n.severity) == (new.message, new.severity)]
        if same:
            repeats = 1 + sum(self._counts.pop(n.identity, 1) for n in same)
            self._counts[new.identity] = repeats
            new.title = f"{new.title} (×{repeats})".strip() if new.title else f"×{repeats}"
        return same

    def excess(self, shown: list[Notification]) -> list[Notification]:
        """The toasts beyond MAX_TOASTS to remove, the newest (last) always kept."""
        over = len(shown) - MAX_TOASTS
        if over <= 0:
            return []
        by_priority = sorted(shown[:-1], key=lambda n: (_SEVERITY_RANK.get(n.severity, 0), n.raised_at))
        for old in by_priority[:over]:
            self._counts.pop(old.identity, None)
        return by_priority[:over]
