"""A reply that copies the reply shape instead of writing its own content (issue 44).

Small local models (and larger ones under a JSON grammar) often answer with the shape they were shown,
slots and all: a work reply whose public text is "<your work this round, ...>", descriptors that read "what
you need next from teammates", a private note addressed to "<a teammate's name>". Such a reply parses, but
nothing in it is the agent's own: routed, it is noise; embedded, every pair scores alike. A field is a copy
when its text, folded (case, whitespace, the slot's brackets and quotes), is one of the shapes' slots
(core.runtime.prompts.REPLY_SLOTS), or is nothing but that slot with a few characters around it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from core.runtime.prompts import REPLY_SLOTS

_SPACE_RE = re.compile(r"\s+")
_TRIM = " \t\n<>\"'`.,;:!()[]{}"
_SLACK = 12  # characters beside a slot that still make a copy ("<…>." or "Public: <…>")


_ROUND_RE = re.compile(r"\bround \d+\b")


def fold(text: str) -> str:
    """Lower case, one space between words, no brackets, quotes or punctuation around the text; "round 1"
    read as "the next round" (a model fills in the round it was told and copies the rest)."""
    folded = _SPACE_RE.sub(" ", text).strip(_TRIM).lower().strip(_TRIM)
    return _ROUND_RE.sub("the next round", folded)


_FOLDED = tuple(sorted({fold(slot) for slot in REPLY_SLOTS}, key=len, reverse=True))


def is_slot(text: str) -> bool:
    """The text is one of the reply shapes' slots (after folding), or that slot and little else."""
    folded = fold(text)
    if not folded:
        return False
    return any(folded == slot or (slot in folded and len(folded) - len(slot) <= _SLACK) for slot in _FOLDED)


def copied_fields(fields: Mapping[str, str], private: Mapping[str, str] | None = None) -> list[str]:
    """The names of ``fields`` whose text is a copied slot, and "private" when a private note is addressed
    to a slot or its text is one."""
    copied = [name for name, text in fields.items() if text and is_slot(text)]
    if private and any(is_slot(target) or is_slot(note) for target, note in private.items()):
        copied.append("private")
    return copied


def without_copied_notes(private: Mapping[str, str]) -> dict[str, str]:
    """The private notes that are the agent's own (a copied note is never routed)."""
    return {target: note for target, note in private.items() if not (is_slot(target) or is_slot(note))}


def describe(fields: Iterable[str]) -> str:
    """The re-ask's one plain line: what was copied and what to write instead."""
    named = ", ".join(fields)
    return (f"the reply repeated the instructions' placeholder text ({named}) instead of your own content: "
            "write what you actually need, offer or did for this problem in each field")
