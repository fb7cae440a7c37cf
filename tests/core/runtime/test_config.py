"""Settings precedence: defaults < config file < environment < command-line flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.llm.urls import DEFAULT_BASE_URL, URLError, check_base_url, strip_userinfo
from core.runtime.config import CallLimits, ConfigError, Settings, resolve_api_key, resolve_base_url
from core.runtime.config_file import load_settings


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_defaults_are_the_reference_values() -> None:
    s = Settings()
    assert (s.tau, s.k_in, s.max_rounds, s.protocol, s.domain) == (0.3, 3, 5, "phased", "code")
    assert s.descriptor_call == CallLimits(0.1, 256)
    assert s.work_call == CallLimits(0.3, 4096)
    assert s.manager_call == CallLimits(0.1, 2000)


def test_file_then_environment_then_flags(tmp_path: Path) -> None:
    path = _config(tmp_path, 'tau = 0.4\nk_in = 2\nmodel = "from-file"\n[work_call]\nmax_tokens = 1000\n')
    from_file = load_settings(path, environ={})
    assert (from_file.tau, from_file.k_in, from_file.model) == (0.4, 2, "from-file")
    assert from_file.work_call == CallLimits(0.3, 1000)
    from_env = load_settings(path, environ={"SWARM_TUI_TAU": "0.5", "SWARM_TUI_MODEL": "from-env"})
    assert (from_env.tau, from_env.k_in, from_env.model) == (0.5, 2, "from-env")
    from_flags = load_settings(path, cli={"tau": 0.6, "model": None}, environ={"SWARM_TUI_TAU": "0.5"})
    assert (from_flags.tau, from_flags.model) == (0.6, "from-file")


def test_settings_may_sit_under_a_swarm_table_with_a_keymap(tmp_path: Path) -> None:
    path = _config(tmp_path, '[swarm]\nmax_rounds = 7\n[swarm.keymap]\nstep_phase = "j"\n')
    settings = load_settings(path, environ={})
    assert settings.max_rounds == 7 and settings.keymap == {"step_phase": "j"}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("tau = 2.0\n", "tau must be between 0 and 1"),
        ("colour = 'red'\n", "unknown setting 'colour'"),
        ("tau = \n", "cannot read config file"),
        ("[work_call]\nspeed = 3\n", "work_call must be a table"),
        ("keymap = 3\n", "keymap must map"),
        ("max_rounds = 0\n", "max_rounds must be between 1 and 10"),
        ("tau = 'abc'\n", "tau must be a number"),
        ("call_timeout = 'x'\n", "call_timeout must be a number"),
        ("max_rounds = 2.5\n", "max_rounds must be a whole number"),
        ("k_in = true\n", "k_in must be a whole number"),
        ("sessions_dir = 5\n", "sessions_dir must be text, got 5"),
        ("no_think = 'yes'\n", "no_think must be true or false"),
        ("swarm = 1\n", "[swarm] must be a table"),
        ("[work_call]\ntemperature = 'hot'\n", "work_call.temperature must be a number"),
        ("[work_call]\nmax_tokens = 0\n", "work_call.max_tokens must be at least 1"),
        ("max_retries = -1\n", "max_retries must be 0 or more"),
        ("first_byte_timeout = 0\n", "first_byte_timeout must be positive"),
        ("first_byte_timeout = 'soon'\n", "first_byte_timeout must be a number"),
        ("max_retry_wait = -1\n", "max_retry_wait must be 0 or more"),
        ("base_url = 'http://[::1/v1'\n", "cannot be parsed"),
        ("base_url = 'http://127.0.0.1:99999/v1'\n", "port '99999'"),
        ("base_url = 'localhost:1234/v1'\n", "must start with http:// or https://"),
        ("base_url = 'http://user:secret@host/v1'\n", "put the key in $OPENAI_API_KEY"),
    ],
)
def test_a_bad_file_is_one_clear_line(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(_config(tmp_path, text), environ={})
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_endpoint_timeouts_have_defaults_and_come_from_the_file(tmp_path: Path) -> None:
    defaults = Settings()
    assert (defaults.first_byte_timeout, defaults.max_retry_wait, defaults.call_timeout) == (30.0, 60.0, 120.0)
    loaded = load_settings(_config(tmp_path, "first_byte_timeout = 5\nmax_retry_wait = 0\n"), environ={})
    assert (loaded.first_byte_timeout, loaded.max_retry_wait) == (5.0, 0.0)


@pytest.mark.parametrize(
    "url", ["http://localhost:1234/v1", "https://api.openai.com/v1", "http://[::1]:8080/v1", "HTTP://Host/v1"]
)
def test_good_endpoint_urls_pass(url: str) -> None:
    assert check_base_url(url) == url


def test_userinfo_is_refused_in_settings_but_stripped_for_the_client() -> None:
    secret = "http://user:secret@host:8/v1"
    with pytest.raises(URLError) as info:
        check_base_url(secret)
    assert "secret" not in str(info.value)
    assert check_base_url(secret, allow_userinfo=True) == secret
    assert strip_userinfo(secret) == "http://host:8/v1" and strip_userinfo("http://h/v1") == "http://h/v1"


def test_a_bad_environment_value_is_named() -> None:
    with pytest.raises(ConfigError, match="SWARM_TUI_K_IN"):
        load_settings(None, environ={"SWARM_TUI_K_IN": "many"}, cli={})


def test_endpoint_and_key_resolution() -> None:
    assert resolve_base_url(Settings(), environ={}) == DEFAULT_BASE_URL
    assert resolve_base_url(Settings(), environ={"OPENAI_BASE_URL": "http://env/v1"}) == "http://env/v1"
    assert resolve_base_url(Settings(base_url="http://flag/v1"), environ={"OPENAI_BASE_URL": "x"}) == "http://flag/v1"
    assert resolve_api_key(Settings(api_key_env="MY_KEY"), environ={"MY_KEY": "k-123"}) == "k-123"
    assert resolve_api_key(Settings(), environ={}) == "not-needed"  # local servers take any key


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://localhost:1234/v1" + "a" * 100_000, "characters long: the limit is 8,192"),
        ("http://local\x01host:1234/v1", "holds the control character '\\x01'"),
    ],
)
def test_urls_the_http_stack_would_reject_are_one_line(url: str, fragment: str) -> None:
    with pytest.raises(URLError) as info:
        check_base_url(url)
    message = str(info.value)
    assert fragment in message and "\n" not in message and "\x01" not in message and len(message) < 400


def test_a_bad_url_on_the_command_line_is_one_line_and_exit_2() -> None:
    import subprocess
    import sys

    for url in ("http://localhost:1234/v1" + "a" * 100_000, "http://local\x01host:1234/v1"):
        out = subprocess.run([sys.executable, "-m", "tui", "--headless", "--base-url", url, "x"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
