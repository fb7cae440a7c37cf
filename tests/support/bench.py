"""``swarm-tui bench`` in-process against scripted servers that answer with the datasets' own solutions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.datasets.catalog import DATA
from core.datasets.loader import load_dataset
from core.datasets.problems import Problem
from core.demo.bench_script import benchmark_script
from core.demo.server import ScriptedServer
from tui.entry import main

DATASETS = DATA  # the copies shipped in the package
HUMANEVAL = DATASETS / "humaneval.jsonl"
MATH = DATASETS / "math500.jsonl"


def dataset_problems() -> list[Problem]:
    return load_dataset(HUMANEVAL).problems + load_dataset(MATH).problems


@pytest.fixture(scope="module")
def right_server() -> Iterator[ScriptedServer]:
    with ScriptedServer(benchmark_script(dataset_problems())) as server:
        yield server


def bench(out: Path, dataset: Path, *args: str, server: ScriptedServer | None = None) -> int:
    argv = ["bench", str(dataset), "--out", str(out), *args]
    if server is not None:
        server.requests.clear()
        argv += ["--base-url", server.base_url]
    return main(argv)


def results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))
