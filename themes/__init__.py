"""Theme files users can pick and add: TOML files turned into Textual ``Theme`` objects.

Ours ship in this folder; users drop more into ``<user config dir>/swarm-tui/themes/``. A file holds
the Theme fields (name, dark, primary, secondary, accent, foreground, background, surface, panel,
success, warning, error) and an optional ``[variables]`` table of extra CSS variables.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

if TYPE_CHECKING:
    from textual.theme import Theme

THEMES_DIR = Path(__file__).parent
_COLOR_FIELDS = ("primary", "secondary", "accent", "foreground", "background", "surface", "panel",
                 "boost", "success", "warning", "error")


class ThemeFileError(ValueError):
    """A theme file cannot be used; the message is one line."""


def user_themes_dir() -> Path:
    return Path(platformdirs.user_config_dir("swarm-tui")) / "themes"


def load_theme_file(path: Path) -> Theme:
    from textual.color import Color, ColorParseError
    from textual.theme import Theme

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ThemeFileError(f"theme {path.name}: cannot read it ({exc})") from None
    name = data.get("name") or path.stem
    if not isinstance(name, str) or "primary" not in data:
        raise ThemeFileError(f"theme {path.name}: needs a name and a primary colour")
    unknown = set(data) - {"name", "dark", "variables", *_COLOR_FIELDS}
    if unknown:
        raise ThemeFileError(f"theme {path.name}: unknown field(s) {', '.join(sorted(unknown))}")
    colours = {key: data[key] for key in _COLOR_FIELDS if key in data}
    for key, value in colours.items():
        try:
            Color.parse(value)
        except (ColorParseError, TypeError):
            raise ThemeFileError(f"theme {path.name}: {key} = {value!r} is not a colour") from None
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(isinstance(v, str) for v in variables.values()):
        raise ThemeFileError(f"theme {path.name}: [variables] must map names to strings")
    return Theme(name=name, dark=bool(data.get("dark", True)), variables=dict(variables), **colours)


def load_themes(folders: list[Path] | None = None) -> tuple[list[Theme], list[str]]:
    """Every theme in the folders (ours, then the user's), and one error line per bad file."""
    themes: list[Theme] = []
    errors: list[str] = []
    for folder in folders if folders is not None else [THEMES_DIR, user_themes_dir()]:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            try:
                themes.append(load_theme_file(path))
            except ThemeFileError as exc:
                errors.append(str(exc))
    return themes, errors
