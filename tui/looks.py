"""How the app looks and which keys it takes: the themes (the shipped ones, the user's folder, the one last
picked) and the config's [keymap], checked."""

from __future__ import annotations

from typing import Any

from .keymap import check_keymap
from .state import read_state


def register_themes(app: Any) -> None:
    """Register every theme found (a broken file is one warning each) and choose the one picked last (the state
    file), else the config's. ``app``: a tui.app.SwarmApp (its state_path and settings)."""
    from themes import load_themes

    themes, errors = load_themes()
    for theme in themes:
        app.register_theme(theme)
    for error in errors:
        app.notify(error, severity="warning")
    wanted = read_state(app.state_path).get("theme") or app.settings.theme
    if wanted in app.available_themes:
        app.theme = wanted


def apply_keymap(app: Any, keymap: Any) -> None:
    """The config's [keymap], checked: unknown ids and keys taken twice are left out (those actions keep their
    default keys) and said once, in one warning."""
    accepted, problems = check_keymap(dict(keymap))
    app.set_keymap(accepted)
    if problems:
        app.notify("keymap: " + "; ".join(problems), title="config [keymap]", severity="warning", timeout=20)
