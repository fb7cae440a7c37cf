"""Export a run's session from the command palette, in every format (core.sessions.export)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from textual.screen import Screen

from core.sessions.export import FORMATS
from core.sessions.model import Session

from ..export import EXPORT_NAMES, ExportError, export_suffix, export_to_file


class SessionExport(Screen[None]):
    """The palette's export commands of a screen showing a run; the screen says where its session is."""

    def export_source(self) -> tuple[Session | None, Path | None, str]:
        """(the session so far, the file it is saved in, why there is none)."""
        return None, None, "nothing to export"

    def palette_commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        """Commands for the palette that have no key: export in every format."""
        commands: list[tuple[str, str, Callable[[], object]]] = []
        for fmt in FORMATS:
            name = EXPORT_NAMES[fmt]
            commands.append((f"Export session as {name}", f"write {export_suffix(fmt)} to exports/ by the session file",
                             partial(self.export_as, fmt)))
        return commands

    def export_as(self, fmt: str) -> Path | None:
        session, base, why = self.export_source()
        if session is None or base is None:
            self.notify(why, severity="warning")
            return None
        sessions_dir = Path(getattr(getattr(self.app, "settings", None), "sessions_dir", "sessions"))
        try:
            path = export_to_file(session, base, fmt, sessions_dir)
        except ExportError as exc:
            self.notify(str(exc), severity="error", timeout=12)
            return None
        self.notify(f"exported {EXPORT_NAMES[fmt]}: {path}", timeout=10)
        return path
