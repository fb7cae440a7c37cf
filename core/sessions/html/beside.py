"""A session's own HTML page written beside its session file (``NAME.html`` next to ``NAME.json``), so that a
page listing runs (the bench report, a comparison) can link pages a person reads; a session that cannot be
read gets no page, and its link stays the session file."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from core.sessions.html.session import session_page
from core.sessions.model import SessionFormatError
from core.sessions.store import load_session


def page_of(session: Path) -> Path:
    """Where a session's page goes: beside it, ``NAME.html``."""
    return session.with_suffix(".html")


def write_pages(sessions: Iterable[Path]) -> dict[Path, Path]:
    """{session file: its page} for every session that loads; a page newer than its session is kept as it is."""
    pages: dict[Path, Path] = {}
    for session in sessions:
        page = page_of(session)
        try:
            if not page.exists() or page.stat().st_mtime < session.stat().st_mtime:
                page.write_text(session_page(load_session(session)), encoding="utf-8")
        except (OSError, SessionFormatError):
            continue
        pages[session] = page
    return pages
