"""The command line: bad input gets one clear line and exit 2; --headless --demo runs end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def swarm(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env=full_env,
        cwd=cwd or ROOT,
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--headless", "--tau", "1.5", "x"], "tau"),
        (["--headless", "--tau", "abc", "x"], "not a number"),
        (["--headless", "--k-in", "0", "x"], "k-in"),
        (["--headless", "--domain", "math", "--k-in", "3", "x"], "k_in must be between 1 and 2"),
        (["--headless", "--max-rounds", "11", "x"], "max-rounds"),
        (["--headless", "--domain", "poetry", "x"], "domain"),
        (["--headless", "--protocol", "gossip", "x"], "protocol"),
        (["--headless", "--no-such-flag", "x"], "unrecognized arguments"),
        (["--headless", "-f", "/no/such/file.txt"], "cannot read problem file"),
        (["--headless"], "needs a problem"),
        (["--json", "x"], "--json goes with --headless"),
        (["--headless", "--config", "/no/such/config.toml", "x"], "config file not found"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(args: list[str], fragment: str) -> None:
    result = swarm(*args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_config_file_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("tau = 'high'\nsurprise = 1\n")
    result = swarm("--headless", "--config", str(config), "x")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "surprise" in result.stderr


def test_unreachable_endpoint_names_the_url_and_the_way_out(tmp_path: Path) -> None:
    result = swarm(
        "--headless", "--base-url", "http://127.0.0.1:9/v1", "hello", env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)}
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "http://127.0.0.1:9/v1" in lines[0] and "--demo" in lines[0]


def test_headless_demo_prints_progress_and_the_answer(tmp_path: Path) -> None:
    result = swarm("--headless", "--demo", env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "DEMO" in result.stderr
    assert "── round 2/5" in result.stderr and "graph:" in result.stderr and "tokens:" in result.stderr
    assert "finished: manager" in result.stderr
    assert "def make_palindrome" in result.stdout
    assert list(tmp_path.glob("*.json")), "the run was not autosaved"


def test_headless_json_writes_the_event_stream(tmp_path: Path) -> None:
    result = swarm(
        "--headless",
        "--demo",
        "--json",
        "--domain",
        "math",
        "-",
        stdin="What is 1+1?",
        env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["type"] == "run_started" and events[0]["problem"] == "What is 1+1?"
    assert events[-1]["type"] == "run_finished"
    assert {"agent_delta", "topology_built", "manager_decided", "round_finished"} <= {e["type"] for e in events}


def test_the_api_key_is_never_written(tmp_path: Path) -> None:
    secret = "sk-test-SECRET-never-written-0123456789"
    save = tmp_path / "run.json"
    result = swarm(
        "--headless",
        "--demo",
        "--json",
        "--save",
        str(save),
        "hi",
        env={"OPENAI_API_KEY": secret, "SWARM_TUI_SESSIONS_DIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert secret not in result.stdout and secret not in result.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace")
