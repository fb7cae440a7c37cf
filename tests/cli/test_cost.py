"""A run's cost on the command line: a priced model name reports what it cost, --max-cost ends the run as a
budget with the best answer so far, and a model with no price is said to be unknown (issue 43, cost)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from tests.support.paths import ROOT


def headless(server: ScriptedServer, tmp_path: Path, *args: str, priced: bool = True,
             command: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config.toml"  # the scripted server is on 127.0.0.1: price it as a hosted endpoint would be
    config.write_text("price_local_endpoints = true\n" if priced else "", encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "SWARM_TUI_SESSIONS_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "tui", *command, "--headless", "--config", str(config), "--base-url", server.base_url,
         *args],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT,
    )


def spent(stderr: str) -> float:
    found = re.search(r"^cost \$([0-9.]+)$", stderr, re.M)
    assert found, stderr[-600:]
    return float(found.group(1))


def test_a_run_on_a_priced_model_reports_its_cost(tmp_path: Path) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(model="gpt-4o-mini")) as server:
        result = headless(server, tmp_path, "--model", "gpt-4o-mini", "--strategy", "single", "Write add(a, b).")
    assert result.returncode == 0, result.stderr
    assert spent(result.stderr) > 0


def test_max_cost_ends_the_run_as_a_budget(tmp_path: Path) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(model="gpt-4o-mini")) as server:
        result = headless(server, tmp_path, "--model", "gpt-4o-mini", "--max-cost", "0.000001", "--max-rounds", "2",
                          "Write add(a, b).")
        sent = [r for r in server.requests if r.call]
    assert result.returncode == 0, result.stderr
    assert "finished: budget — the cost budget of $0.000001 was reached" in result.stderr, result.stderr[-800:]
    assert len(sent) == 1  # the first call crossed the cap: no further call was sent
    assert spent(result.stderr) > 0.000001


def test_a_model_without_a_price_is_unknown(tmp_path: Path) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(model="house-model-7")) as server:
        result = headless(server, tmp_path, "--model", "house-model-7", "--strategy", "single", "Write add(a, b).")
    assert result.returncode == 0, result.stderr
    assert "cost: unknown for model house-model-7" in result.stderr


def test_a_run_on_a_local_server_says_free_not_zero_dollars(tmp_path: Path) -> None:
    """A local server is free: the summary says so in the words every face uses (the run header shows nothing),
    never "cost $0" as if it had been priced."""
    with ScriptedServer(demo_script, ServerBehaviour(model="gpt-4o-mini")) as server:
        result = headless(server, tmp_path, "--model", "gpt-4o-mini", "--strategy", "single", "Write add(a, b).",
                          priced=False)
    assert result.returncode == 0, result.stderr
    assert re.search(r"^cost: free \(local server\)$", result.stderr, re.M), result.stderr[-600:]
    assert "$0" not in result.stderr


def test_compare_rows_on_a_local_server_say_free(tmp_path: Path) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(model="gpt-4o-mini")) as server:
        result = headless(server, tmp_path, "--model", "gpt-4o-mini", "--strategy", "single,chain", "--max-rounds",
                          "1", "Write add(a, b).", priced=False, command=("compare",))
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith(("single ", "chain "))]
    assert len(rows) == 2 and all(line.rstrip().endswith("free (local server)") for line in rows), result.stdout
    assert "$0" not in result.stdout + result.stderr
