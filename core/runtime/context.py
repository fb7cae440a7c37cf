"""Fitting a prompt into the model's context, by the method's own memory rule.

A method that builds a prompt from parts it may trim hands the engine a *shrink*: given the most characters
the whole prompt may hold, it returns the prompt rebuilt smaller, or None when nothing in it can be trimmed.
The rule every method here follows (``shrink_pieces``): the oldest remembered messages go first, whole;
when they are gone and the prompt is still too long, the messages it reads this turn are cut to equal
shares, each marked with how much was cut. The problem and the instructions are never cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Messages = list[dict[str, str]]
Shrink = Callable[[int], Messages | None]


def prompt_chars(messages: Sequence[dict[str, str]]) -> int:
    return sum(len(m.get("content") or "") for m in messages)


def cut_text(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: its beginning and a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - 60)
    return text[:keep].rstrip() + f"\n… [{len(text) - keep} characters cut to fit the model's context]"


def equal_shares(texts: Sequence[str], budget: int) -> list[str]:
    """Cut ``texts`` to fit ``budget`` characters together: each gets an equal share, and a text shorter
    than its share leaves the rest to the others."""
    if sum(len(t) for t in texts) <= budget:
        return list(texts)
    limits: dict[int, int] = {}
    left, remaining = max(0, budget), sorted(range(len(texts)), key=lambda i: len(texts[i]))
    while remaining:
        share = left // len(remaining)
        index = remaining[0]
        if len(texts[index]) <= share:
            limits[index] = len(texts[index])
            left -= len(texts[index])
            remaining.pop(0)
            continue
        for index in remaining:
            limits[index] = share
        break
    return [cut_text(text, limits[i]) for i, text in enumerate(texts)]


def fit_pieces(droppable: Sequence[str], shared: Sequence[str], budget: int) -> tuple[int, list[str]]:
    """(how many of ``droppable``'s first pieces to leave out, ``shared`` cut to fit) so that the pieces
    kept hold at most ``budget`` characters. ``droppable``: remembered messages, oldest first, left out
    whole; ``shared``: what the prompt reads this turn, cut to equal shares once no old message is left."""
    total = sum(len(p) for p in droppable) + sum(len(p) for p in shared)
    drop = 0
    while total > budget and drop < len(droppable):
        total -= len(droppable[drop])
        drop += 1
    if total <= budget:
        return drop, list(shared)
    return drop, equal_shares(shared, budget)


def shrink_pieces(
    build: Callable[[list[str], list[str]], Messages],
    droppable: Sequence[str],
    shared: Sequence[str] = (),
    *,
    on_drop: Callable[[int], None] | None = None,
) -> Shrink:
    """A shrink for a prompt that ``build`` makes from remembered pieces (oldest first) and the pieces it
    reads this turn (see fit_pieces). ``on_drop`` hears how many of the oldest pieces a shrink left out."""
    droppable, shared = list(droppable), list(shared)
    sizes: list[int] = []  # measured on the first shrink: most prompts never need one

    def shrink(most_chars: int) -> Messages | None:
        if not sizes:
            whole = prompt_chars(build(droppable, shared))
            bare = prompt_chars(build([], ["" for _ in shared]))
            pieces = sum(len(p) for p in droppable) + sum(len(p) for p in shared)
            sizes.extend((bare, max(0, whole - bare - pieces)))  # the rest, and the labels around the pieces
        bare, overhead = sizes
        drop, cut = fit_pieces(droppable, shared, most_chars - bare - overhead)
        if not drop and cut == shared:
            return None
        if drop and on_drop is not None:
            on_drop(drop)
        return build(droppable[drop:], cut)

    return shrink
