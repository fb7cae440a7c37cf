"""How the benchmark report words what it shows (report.md, report.json, report.html, the plots): a result
folder's setup, the endpoint redacted as a session's page redacts it and the dataset as a path relative to the
bench folder (a shipped dataset by its name), never the absolute path of the machine that ran it; a pass/fail
cell's mark."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from core.datasets.catalog import DATA
from core.llm.urls import redact_url

SETUP_KEYS = ("dataset", "problems", "repeats", "seed", "base_url")


def dataset_name(dataset: str, folder: Path) -> str:
    """A shipped dataset by its file name; any other path relative to ``folder``; a catalogue name as it is."""
    if "/" not in dataset and os.sep not in dataset:
        return dataset
    path = Path(dataset)
    try:
        if path.resolve().parent == Path(DATA).resolve():
            return f"{path.name} (shipped)"
        return Path(os.path.relpath(path.resolve(), Path(folder).resolve())).as_posix()
    except (OSError, ValueError):  # another drive (Windows): no relative path exists
        return path.name


def public_setup(meta: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The folder's recorded setup with its endpoints redacted and its dataset path made relative."""
    out = dict(meta)
    if isinstance(out.get("base_url"), str):
        out["base_url"] = redact_url(out["base_url"])
    if isinstance(out.get("base_urls"), list):
        out["base_urls"] = [redact_url(u) if isinstance(u, str) else u for u in out["base_urls"]]
    if isinstance(out.get("dataset"), str):
        out["dataset"] = dataset_name(out["dataset"], folder)
    return out


def setup_line(meta: dict[str, Any], folder: Path) -> str:
    """"dataset humaneval.jsonl (shipped), problems 2, …": what the report's header shows of a folder."""
    shown = public_setup(meta, folder)
    return ", ".join(f"{k} {shown[k]}" for k in SETUP_KEYS if shown.get(k) is not None)


def cell_mark(solved: int, runs: int) -> str:
    """✓ solved, ✗ not, k/n over repeats, · not run."""
    return "·" if not runs else ("✓" if solved else "✗") if runs == 1 else f"{solved}/{runs}"
