"""One settings model: a command-line flag, a config file entry and an MCP argument are checked through the
same field (core.runtime.config.Settings) and refused with the same bound and the same one-line message;
the MCP server takes its defaults from the settings, not from numbers of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.mcp.tasks import StartError, SwarmManager
from core.runtime.config import ConfigError, Settings
from core.runtime.config_file import load_settings
from tests.support.cli import swarm

# (setting, flag, bad value, the message every face gives)
CASES = [
    ("tau", "--tau", "1.5", "tau must be between 0 and 1, got 1.5"),
    ("max_rounds", "--max-rounds", "11", "max_rounds must be between 1 and 10, got 11"),
    ("time_budget", "--time-budget", "0.5", "time_budget must be between 1 and 36000 seconds, got 0.5"),
    ("max_calls", "--max-calls", "100001", "max_calls must be between 1 and 100000, got 100001"),
]


def _mcp_refusal(setting: str, value: Any) -> str:
    manager = SwarmManager(Settings())
    arguments: dict[str, Any] = {"task": "Add two numbers."}
    if setting in ("time_budget", "max_calls"):
        arguments["options"] = {setting: value}
    else:
        arguments[setting] = value
    with pytest.raises(StartError) as info:
        manager.validate(**arguments)
    return str(info.value)


@pytest.mark.parametrize(("setting", "flag", "text", "message"), CASES, ids=[c[0] for c in CASES])
def test_cli_config_and_mcp_refuse_a_value_alike(tmp_path: Path, setting: str, flag: str, text: str,
                                                 message: str) -> None:
    result = swarm("--headless", "--demo", flag, text, "x")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr

    config = tmp_path / "config.toml"
    config.write_text(f"{setting} = {text}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(config, environ={})
    assert str(info.value) == f"{config}: {message}"

    value = float(text) if "." in text else int(text)
    assert _mcp_refusal(setting, value).endswith(message)


def test_the_environment_is_checked_by_the_same_fields() -> None:
    with pytest.raises(ConfigError, match="environment variable SWARM_TUI_TAU: tau must be a number, got 'high'"):
        load_settings(None, environ={"SWARM_TUI_TAU": "high"})
    with pytest.raises(ConfigError, match="SWARM_TUI_MAX_ROUNDS: max_rounds must be between 1 and 10, got 12"):
        load_settings(None, environ={"SWARM_TUI_MAX_ROUNDS": "12"})


def test_mcp_takes_its_defaults_from_the_server_settings() -> None:
    manager = SwarmManager(Settings(tau=0.45, max_rounds=7))
    settings, _, _ = manager.validate("Add two numbers.")
    assert (settings.tau, settings.max_rounds) == (0.45, 7)


def test_values_come_back_as_their_types() -> None:
    """A domain or protocol given as text is held as its enum; a whole number in a file is a number."""
    path_free = load_settings(None, cli={"domain": "math", "protocol": "single-pass", "tau": 1}, environ={})
    assert type(path_free.domain).__name__ == "DomainName" and path_free.domain == "math"
    assert type(path_free.protocol).__name__ == "RoundProtocol"
    assert isinstance(path_free.tau, float)
