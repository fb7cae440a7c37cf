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


def folded_slots(slots: Iterable[str]) -> tuple[str, ...]:
    """A method's own slots, folded as is_slot reads them (longest first)."""
    return tuple(sorted({fold(slot) for slot in slots} - {""}, key=len, reverse=True))


def is_slot(text: str, extra: tuple[str, ...] = ()) -> bool:
    """The text is one of the reply shapes' slots (after folding), or that slot and little else. ``extra``:
    a method's own slots (folded_slots), checked beside the runtime's."""
    folded = fold(text)
    if not folded:
        return False
    return any(folded == slot or (slot in folded and len(folded) - len(slot) <= _SLACK)
               for slot in (*extra, *_FOLDED))


_MIN_ECHO = 12  # characters: "ok" or "yes" may well be in the instructions and is not a copy of them


def echoes(text: str, instructions: Iterable[str]) -> bool:
    """A plain-text reply that is nothing but the app's own instructions (the ask, the role's job line): a
    model that repeats what it was told instead of doing it. Only app-authored text counts (never a
    teammate's quoted work or the problem), and each line of the reply must be whole sentences of it: an
    answer that matches an example inside a sentence ("for example [FINAL] 14/3") is the model's own."""
    lines = [fold(line) for line in text.splitlines() if fold(line)]
    if not lines or sum(len(line) for line in lines) < _MIN_ECHO:
        return False
    told = [fold(line) for block in instructions for line in block.splitlines() if fold(line)]
    return all(any(_sentences_of(line, said) for said in told) for line in lines)


def _sentences_of(part: str, line: str) -> bool:
    """``part`` is one or more whole sentences of ``line`` (it begins a sentence and ends one)."""
    start = line.find(part)
    while start >= 0:
        end = start + len(part)
        begins = start == 0 or line[:start].rstrip().endswith((".", "?", "!", ":", ";"))
        if begins and (end == len(line) or not (line[end].isalnum() or line[end].isspace())):
            return True
        start = line.find(part, start + 1)
    return False


def copied_fields(
    fields: Mapping[str, str], private: Mapping[str, str] | None = None, slots: tuple[str, ...] = ()
) -> list[str]:
    """The names of ``fields`` whose text is a copied slot, and "private" when a private note is addressed
    to a slot or its text is one. ``slots``: a method's own (folded_slots)."""
    copied = [name for name, text in fields.items() if text and is_slot(text, slots)]
    if private and any(is_slot(target) or is_slot(note) for target, note in private.items()):
        copied.append("private")
    return copied


def without_copied_notes(private: Mapping[str, str]) -> dict[str, str]:
    """The private notes that are the agent's own (a copied note is never routed)."""
    return {target: note for target, note in private.items() if not (is_slot(target) or is_slot(note))}


INSTEAD = "write what you actually need, offer or did for this problem in each field"


COPIED = "the reply repeated the instructions' placeholder text"  # how a copy's one line begins
ECHOED = "the reply repeated the instructions"  # ... and a plain reply's that only repeats what it was told


def describe(fields: Iterable[str], instead: str = INSTEAD) -> str:
    """The re-ask's one plain line: what was copied and what to write instead (no fields: a plain-text reply
    that repeated its instructions)."""
    named = ", ".join(fields)
    what = f"{COPIED} ({named})" if named else ECHOED
    return f"{what} instead of your own content: {instead}"
