"""``swarm-tui replay FILE --headless --fork ROUND`` as a user runs it: the fork goes on with the method options
the parent ran with (recorded in its session), and ``-o`` flags given for the fork override them."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.sessions.store import load_session
from tests.support.cli import swarm

# One option each that differs from the method's default: a fork that dropped it would run with the default.
CASES = [
    ("dytopo", "memory", "latest"),
    ("random", "seed", "7"),
    ("broadcast", "memory", "latest"),
    ("chain", "prompt_order", "paper"),
    ("star", "hub", "Tester"),
    ("dmoa", "router", "llm"),
    ("topoweaver", "fallback", "true"),
]


def _parent(tmp_path: Path, strategy: str, *options: str) -> Path:
    path = tmp_path / "parent.json"
    flags = [arg for option in options for arg in ("-o", option)]
    result = swarm("--headless", "--demo", "--strategy", strategy, *flags, "--save", str(path), "a problem",
                   env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path / "sessions")})
    assert result.returncode == 0, result.stderr
    return path


def _fork(tmp_path: Path, parent: Path, *flags: str) -> tuple[str, dict[str, object]]:
    path = tmp_path / "fork.json"
    result = swarm("replay", str(parent), "--headless", "--fork", "1", *flags, "--save", str(path),
                   env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path / "sessions")})
    assert result.returncode == 0, result.stderr
    fork = load_session(path)
    assert fork.metadata.strategy == load_session(parent).metadata.strategy
    return result.stderr, fork.method_options


@pytest.mark.parametrize(("strategy", "key", "value"), CASES, ids=[c[0] for c in CASES])
def test_a_cli_fork_runs_with_the_options_its_parent_ran_with(tmp_path: Path, strategy: str, key: str,
                                                               value: str) -> None:
    parent = _parent(tmp_path, strategy, f"{key}={value}")
    header, options = _fork(tmp_path, parent)
    assert options == load_session(parent).method_options  # every option, not only the one given
    assert f"{key}={value}" in header  # the header names the options the fork runs with


def test_options_given_for_a_cli_fork_override_the_parents(tmp_path: Path) -> None:
    parent = _parent(tmp_path, "dmoa", "router=llm", "k=2")
    header, options = _fork(tmp_path, parent, "-o", "k=3")
    assert options["router"] == "llm" and options["k"] == 3
    assert "k=3" in header and "router=llm" in header
    assert "the fork goes on with router llm (tau 0.1, K 3)" in header  # the recorded K was 2: said once
