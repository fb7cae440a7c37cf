"""A comparison written out beside its compare record (core.compose.compare_export): Markdown, JSON, CSV and the
HTML page; what was written, or why not, said in a toast."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.sessions.compare_record import CompareRecord

EXPORT_NAMES = {"md": "Markdown", "json": "JSON", "csv": "CSV", "html": "HTML"}


def export_comparison(screen: Any, record: CompareRecord, formats: tuple[str, ...]) -> list[Path]:
    """Write ``record`` in ``formats`` beside its file (the working folder when it has none yet); ``screen``
    says what happened. The files written, up to the first that failed."""
    from core.compose.compare_export import export_paths, export_record

    folder = record.path.parent if record.path is not None else Path.cwd()
    targets = export_paths(record, folder)
    written = []
    try:
        for fmt in formats:
            written.append(export_record(record, fmt, targets[fmt]))
    except OSError as exc:
        screen.notify(f"cannot export: {exc.strerror or exc}", severity="error", timeout=10)
        return written
    screen.notify("exported: " + ", ".join(str(p) for p in written), timeout=8)
    return written
