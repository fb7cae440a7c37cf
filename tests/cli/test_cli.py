"""The command line: bad input gets one clear line and exit 2; --headless --demo runs end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import swarm
from tests.support.paths import ROOT


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--headless", "--tau", "1.5", "x"], "tau"),
        (["--headless", "--tau", "abc", "x"], "tau must be a number"),
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
        (["--headless", "--demo", "--save", "run.txt", "x"], "must end in .json or .toml"),
        (["--headless", "--demo", "--save", "/tmp", "x"], "must end in .json or .toml"),
        (["--headless", "--config", "/tmp", "x"], "cannot read config file"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(args: list[str], fragment: str) -> None:
    result = swarm(*args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("stdin_errors", ["surrogateescape", "strict"])  # C.UTF-8 vs other UTF-8 locales
def test_a_problem_that_is_not_utf8_is_one_line(stdin_errors: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tui", "--headless", "--demo", "-"],
        input=b"bad \xff bytes",
        capture_output=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONIOENCODING": f"utf-8:{stdin_errors}"},
    )
    stderr = result.stderr.decode()
    assert result.returncode == 2 and "not valid UTF-8" in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1


def test_a_problem_too_long_to_save_is_refused_before_the_run() -> None:
    from core.sessions.model import MAX_STRING

    result = swarm("--headless", "--demo", "-", stdin="x" * (MAX_STRING + 1))
    assert result.returncode == 2 and "the problem is too long" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


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
    assert "method dytopo with descriptor_context=full, memory=accumulate, payload=auto, prompt_order=conversation" in (
        result.stderr)  # how the method was set up
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


def test_json_lines_into_a_reader_that_goes_away_stop_the_run_cleanly(tmp_path: Path) -> None:
    from core.sessions.store import load_session

    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "--headless", "--demo", "--json", "x"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "SWARM_TUI_SESSIONS_DIR": str(tmp_path)},
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert json.loads(proc.stdout.readline())["type"] == "run_started"
    proc.stdout.close()  # like `swarm-tui --json ... | head -1`
    stderr = proc.stderr.read()
    assert proc.wait(timeout=300) == 130
    assert "Traceback" not in stderr and "session saved" in stderr
    (saved,) = tmp_path.glob("*.json")
    session = load_session(saved)
    assert session.outcome is not None and session.outcome.reason == "cancelled"


def test_a_session_that_cannot_be_saved_is_reported_before_the_rounds_run(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    result = swarm("--headless", "--demo", "--max-rounds", "1", "--save", str(blocker / "run.json"), "x")
    assert result.returncode == 0, result.stderr
    warning = result.stderr.index("swarm-tui: warning: cannot save the session")
    assert warning < result.stderr.index("── round 1")
    assert result.stderr.count("swarm-tui: warning:") == 1  # once, not after every round
    assert "Traceback" not in result.stderr


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


def test_version_prints_the_package_version() -> None:
    from importlib.metadata import version

    out = swarm("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"swarm-tui {version('swarm-tui')}"


def test_a_headless_run_builds_its_method_once_and_a_team_check_is_still_one_line(monkeypatch: Any) -> None:
    """The command line checks a headless run's options without building the method; the run's one assembly
    builds it (before any request), and an option only the team can check still ends in one line, exit 2."""
    import core.methods.catalogue as catalogue
    from tui.cli import main

    built: list[str] = []
    real = catalogue.build_method

    def counting(name: str, options: Any, domain: Any) -> Any:
        built.append(name)
        return real(name, options, domain)

    monkeypatch.setattr(catalogue, "build_method", counting)
    monkeypatch.setattr("tui.cli.options.build_method", counting)
    monkeypatch.setattr("core.compose.plan.build_method", counting)
    assert main.main(["--headless", "--demo", "--strategy", "star", "-o", "hub=Nobody", "x"]) == 2
    assert built == ["star"]  # once, in the run's plan
