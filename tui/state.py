"""A small state file (not the config): remembers the theme the user picked last."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import platformdirs


def default_state_path() -> Path:
    return Path(platformdirs.user_state_dir("swarm-tui")) / "state.json"


def read_state(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # missing or damaged: start from nothing, it is only a convenience
    return data if isinstance(data, dict) else {}


def write_state(path: Path | None, **changes: Any) -> str:
    """Merge changes into the state file; returns an error line, or "" when it worked."""
    if path is None:
        return ""
    data = read_state(path) | changes
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return ""
