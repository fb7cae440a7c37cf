"""The sweep's cost (issue 43, cost): a bench on a priced model reports what each method cost, in the table, the
rows and the report; --sweep-max-cost stops starting new runs once the finished ones cost that much."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.datasets.catalog import DATA
from core.datasets.loader import load_dataset
from core.demo.behaviour import ServerBehaviour
from core.demo.bench_script import benchmark_script
from core.demo.server import ScriptedServer
from tui.entry import main

MATH = DATA / "math500.jsonl"


def bench(tmp_path: Path, server: ScriptedServer, *args: str, priced: bool = True) -> int:
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "config.toml"  # the scripted server is on 127.0.0.1: priced as a hosted endpoint would be
    config.write_text("price_local_endpoints = true\n" if priced else "", encoding="utf-8")
    return main(["bench", str(MATH), "--out", str(tmp_path / "out"), "--strategy", "single", "--base-url",
                 server.base_url, "--model", "gpt-4o-mini", "--config", str(config), *args])


def test_a_priced_sweep_reports_its_cost_and_the_cap_stops_new_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    problems = load_dataset(MATH).problems[:3]
    with ScriptedServer(benchmark_script(problems), ServerBehaviour(model="gpt-4o-mini")) as server:
        assert bench(tmp_path / "all", server, "--limit", "3") == 0
        full = capsys.readouterr().out
        assert bench(tmp_path / "capped", server, "--limit", "3", "--sweep-max-cost", "0.000001") == 0
        capped = capsys.readouterr()
    rows = json.loads((tmp_path / "all" / "out" / "results.json").read_text(encoding="utf-8"))["rows"]
    assert len(rows) == 3 and all(r["cost_usd"] > 0 for r in rows)
    summary = json.loads((tmp_path / "all" / "out" / "results.json").read_text(encoding="utf-8"))["summary"][0]
    assert summary["total_cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in rows))
    assert "cost" in full.splitlines()[1] and "$" in full  # the table's cost column
    report = (tmp_path / "all" / "out" / "report.md").read_text(encoding="utf-8")
    assert "| cost |" in report
    kept = json.loads((tmp_path / "capped" / "out" / "results.json").read_text(encoding="utf-8"))["rows"]
    assert len(kept) == 1, "the first run crossed the cap: no other run started"
    assert "cost cap of $0.000001 was reached" in capped.err


def test_a_sweep_on_a_local_server_is_said_free(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As the run's summary: a free local sweep's table and report say "free (local server)", not "$0"; the
    machine-readable total stays a number."""
    problems = load_dataset(MATH).problems[:1]
    with ScriptedServer(benchmark_script(problems), ServerBehaviour(model="gpt-4o-mini")) as server:
        assert bench(tmp_path, server, "--limit", "1", priced=False) == 0
    table = capsys.readouterr().out.splitlines()
    row = next(line for line in table if line.startswith("single "))
    assert row.rstrip().endswith("free (local server)"), table
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert results["summary"][0]["total_cost_usd"] == 0 and results["summary"][0]["cost"] == "free (local server)"
    assert "| free (local server) |" in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
