"""The user's ``[keymap]`` checked before Textual applies it.

Textual accepts any keymap silently: an unknown binding id does nothing, and a key given to a second
action on the same screen takes it from the first, which then vanishes from the footer and the help.
``check_keymap`` keeps only the entries that are safe and says what it dropped, once; a dropped entry
leaves that action on its default key.
"""

from __future__ import annotations

from collections.abc import Mapping

from textual.binding import Binding
from textual.keys import _character_to_key

# Keys every screen already uses outside our bindings: quit, the palette, ^C, focus moves.
RESERVED = {"ctrl+q": "quit", "ctrl+p": "the command palette", "ctrl+c": "copy/quit help",
            "tab": "next pane", "shift+tab": "previous pane"}


def binding_groups() -> dict[str, list[Binding]]:
    """Every screen's (and dialog's) bindings that carry an id, by where they are active together."""
    from .bindings import REPLAY_BINDINGS, RUN_BINDINGS
    from .screens.compare import COMPARE_BINDINGS
    from .screens.confirm import ConfirmScreen
    from .screens.help import HelpScreen
    from .screens.inbox import InboxScreen
    from .screens.launch import LaunchScreen
    from .screens.replay import JumpScreen
    from .screens.sessions import SessionPickerScreen, SessionTable
    from .widgets.search_bar import SEARCH_BAR_BINDINGS

    def own(bindings: object) -> list[Binding]:
        return [b for b in bindings if isinstance(b, Binding)]  # type: ignore[attr-defined]

    return {
        "run screen": own(RUN_BINDINGS),
        "replay screen": own(REPLAY_BINDINGS),
        "compare screen": own(COMPARE_BINDINGS),
        "launch form": own(LaunchScreen.BINDINGS),
        "session picker": own(SessionPickerScreen.BINDINGS) + own(SessionTable.BINDINGS),
        "quit dialog": own(ConfirmScreen.BINDINGS),
        "help": own(HelpScreen.BINDINGS),
        "jump dialog": own(JumpScreen.BINDINGS),
        "inbox": own(InboxScreen.BINDINGS),
        "search bar": own(SEARCH_BAR_BINDINGS),
    }


def _loaded_ids() -> set[str]:
    """Binding ids of every widget and screen class of this app loaded so far (a method's own widget
    may bring its keys): an id there is not "unknown" even outside the groups checked for clashes."""
    from textual.dom import DOMNode

    ids: set[str] = set()
    pending: list[type] = [DOMNode]
    seen: set[type] = set()
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        pending.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] == "tui":
            ids.update(b.id for b in getattr(cls, "BINDINGS", []) if isinstance(b, Binding) and b.id)
    return ids


def _keys(text: str) -> list[str]:
    return [k.strip() for k in str(text).split(",") if k.strip()]


def _norm(key: str) -> str:
    """One spelling per key: "?" and "question_mark" are the same key."""
    return _character_to_key(key) if len(key) == 1 else key.lower() if "+" in key else key


def check_keymap(keymap: Mapping[str, object],
                 groups: dict[str, list[Binding]] | None = None) -> tuple[dict[str, str], list[str]]:
    """(the entries to apply, one line per entry left out and why)."""
    groups = binding_groups() if groups is None else groups
    defaults: dict[str, str] = {}
    for bindings in groups.values():
        for b in bindings:
            if b.id:
                defaults.setdefault(b.id, b.key)
    accepted: dict[str, str] = {}
    problems: list[str] = []
    elsewhere = _loaded_ids() - defaults.keys()
    for ident, value in keymap.items():
        keys = _keys(str(value)) if isinstance(value, str) else []
        if ident in elsewhere and keys:
            accepted[ident] = ",".join(keys)  # a widget's own key, outside the screens checked here
        elif ident not in defaults:
            problems.append(f"unknown binding id {ident!r} (= {value!r}) ignored")
        elif not keys:
            problems.append(f"{ident} = {value!r} names no key: kept {defaults[ident]}")
        else:
            accepted[ident] = ",".join(keys)
    while True:
        dropped = _clashes(accepted, groups, defaults)
        if not dropped:
            return accepted, problems
        for ident, why in dropped.items():
            if ident in accepted:
                problems.append(f"{ident} = {accepted.pop(ident)!r}: {why}; kept its default {defaults[ident]}")


def _clashes(accepted: dict[str, str], groups: dict[str, list[Binding]],
             defaults: dict[str, str]) -> dict[str, str]:
    """Remapped ids whose key another action of the same screen also has (or a reserved key)."""
    out: dict[str, str] = {}
    for where, bindings in groups.items():
        owners: dict[str, list[str]] = {}
        for b in bindings:
            keys = accepted.get(b.id, b.key) if b.id else b.key
            for key in _keys(keys):
                owners.setdefault(_norm(key), [])
                if (b.id or b.action) not in owners[_norm(key)]:
                    owners[_norm(key)].append(b.id or b.action)
        for key, idents in owners.items():
            remapped = [i for i in idents if i in accepted]
            if key in RESERVED and remapped:
                for ident in remapped:
                    out.setdefault(ident, f"{key} is {RESERVED[key]}")
            if len(idents) > 1 and remapped:
                for ident in remapped:
                    others = ", ".join(i for i in idents if i != ident)
                    out.setdefault(ident, f"{key} is also {others} on the {where}")
    return out
