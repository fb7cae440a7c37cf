"""Theme colours as Rich styles, for the panes that draw Rich Text (graph, method views).

Only ``$variables`` reach the .tcss; drawings made of Rich Text ask the running theme here, so a theme
switch recolours them too.
"""

from __future__ import annotations

from textual.app import App
from textual.color import Color, ColorParseError


def theme_color(app: App, name: str, fallback: str) -> str:
    """The theme variable ``name`` as a hex colour, or ``fallback`` when the theme has none."""
    try:
        return Color.parse(app.theme_variables[name]).hex6
    except (KeyError, ColorParseError):
        return fallback
