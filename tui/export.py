"""Export from the TUI: core.sessions.export's text, written to ``exports/`` next to the session file.

Not beside it: a JSON or TOML export is a readable session too, and the session picker would list it
as a second run. A shipped example lives inside the installed package, so its exports go to the
sessions directory's ``exports/`` instead. An export never overwrites the session file it came from.
"""

from __future__ import annotations

from pathlib import Path

from core.sessions.export import export_session
from core.sessions.model import Session, SessionFormatError
from sessions import EXAMPLES_DIR

EXPORT_NAMES = {"md": "Markdown", "json": "JSON", "toml": "TOML", "dot": "DOT", "mermaid": "Mermaid",
                "html": "HTML"}
_SUFFIXES = {"md": ".md", "json": ".json", "toml": ".toml", "dot": ".dot", "mermaid": ".mmd", "html": ".html"}
EXPORTS_DIR = "exports"  # beside the sessions, never among them


class ExportError(Exception):
    """Export failed; ``str()`` is one line for a notification."""


def export_suffix(fmt: str) -> str:
    return _SUFFIXES[fmt]


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def export_path(base: Path, fmt: str, sessions_dir: Path) -> Path:
    """Where exporting the session saved at ``base`` as ``fmt`` writes."""
    directory = (Path(sessions_dir) if _same(base.parent, EXAMPLES_DIR) else base.parent) / EXPORTS_DIR
    target = directory / (base.stem + _SUFFIXES[fmt])
    if _same(target, base):  # e.g. JSON of a .json session: keep the original untouched
        target = directory / f"{base.stem}.export{_SUFFIXES[fmt]}"
    return target


def export_to_file(session: Session, base: Path, fmt: str, sessions_dir: Path) -> Path:
    """Render and write; ExportError with one line when it cannot."""
    target = export_path(Path(base), fmt, Path(sessions_dir))
    try:
        text = export_session(session, fmt)
    except (ValueError, SessionFormatError) as exc:
        raise ExportError(f"cannot export as {fmt}: {exc}") from None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ExportError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target
