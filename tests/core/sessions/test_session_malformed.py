"""Malformed and hostile session files: each gives one clear line naming the file and the problem,
through load_session and through the CLI (exit 2, no traceback). Nothing in a file is executed."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.sessions.model import SessionFormatError
from core.sessions.store import load_session
from sessions import EXAMPLES_DIR
from tests.support.paths import ROOT
from tui.entry import main as cli_main

BASE: dict[str, Any] = json.loads((EXAMPLES_DIR / "example-math.json").read_text(encoding="utf-8"))


def _json(data: Any) -> bytes:
    return json.dumps(data).encode()


def _edit(change: Callable[[dict[str, Any]], None]) -> bytes:
    data = copy.deepcopy(BASE)
    change(data)
    return _json(data)


def _event(data: dict[str, Any], kind: str, n: int = 0) -> dict[str, Any]:
    return [e for e in data["events"] if e["type"] == kind][n]


def _set(kind: str, key: str, value: Any, n: int = 0) -> bytes:
    def change(data: dict[str, Any]) -> None:
        _event(data, kind, n)[key] = value

    return _edit(change)


def _topology(key: str, value: Any) -> bytes:
    def change(data: dict[str, Any]) -> None:
        _event(data, "topology_built")["routing"][key] = value

    return _edit(change)


def _insert(index: int, event: dict[str, Any]) -> bytes:
    return _edit(lambda data: data["events"].insert(index, event))


BASE_TEXT = json.dumps(BASE)

# (case id, file name, content or None for "make a directory / leave missing", expected fragment)
CASES: list[tuple[str, str, bytes | None, str]] = [
    ("truncated", "s.json", BASE_TEXT[: len(BASE_TEXT) // 2].encode(), "truncated"),
    ("corrupt-json", "s.json", b'{"schema_version": 1, "events": [}', "not valid JSON"),
    ("empty", "s.json", b"", "the file is empty"),
    ("binary-junk", "s.json", bytes(range(256)) * 4, "not a text file"),
    ("nul-bytes", "s.json", b'{"schema_version": 1\x00}', "binary data"),
    ("toml-garbage", "s.toml", b"schema_version = = 1\n[[events]\ntype = ", "not valid TOML"),
    ("future-schema", "s.json", _edit(lambda d: d.update(schema_version=99)), "newer than this swarm-tui"),
    ("no-schema", "s.json", _json({"events": []}), "no schema_version"),
    ("top-level-list", "s.json", b"[1, 2, 3]", "not a swarm-tui session"),
    ("wrong-type", "s.json", _set("run_started", "problem", 42), "field 'problem' must be text"),
    ("string-for-list", "s.json", _set("run_started", "workers", "Solver"), "'workers' must be a list"),
    ("huge-int", "s.json", _set("round_finished", "prompt_tokens", 10**30), "too large"),
    ("huge-digits", "s.json", b'{"schema_version": 1, "x": ' + b"9" * 5000 + b"}", "not valid session data"),
    ("huge-float", "s.json", BASE_TEXT.replace('"latency_s": ', '"latency_s": 1e999, "x": ', 1).encode(), "not finite"),
    ("nan", "s.json", BASE_TEXT.replace('"latency_s": ', '"latency_s": NaN, "x": ', 1).encode(), "NaN"),
    ("toml-nan", "s.toml", b"schema_version = 1\nx = nan\n", "not finite"),
    ("unknown-event", "s.json", _insert(1, {"type": "launch_missiles", "ts": 1.0}), "unknown event type"),
    (
        "import-as-type",
        "s.json",
        _insert(1, {"type": "__import__('os').system('touch PWNED')", "ts": 1.0}),
        "unknown event type",
    ),
    ("unknown-field", "s.json", _set("round_started", "exec", "rm -rf /"), "unknown field 'exec'"),
    ("negative-round", "s.json", _set("agent_finished", "round", -3), "negative"),
    ("round-out-of-order", "s.json", _set("round_started", "round", 5, 1), "round 5 follows round 1"),
    ("bad-similarity", "s.json", _topology("similarity", [[0.1, 0.2]]), "similarity must be a 3x3 matrix"),
    ("bad-routing", "s.json", _topology("edges", [{"src": "Solver"}]), "routing is malformed"),
    (
        "unknown-agent-edge",
        "s.json",
        _topology("edges", [{"src": "Mallory", "dst": "Solver", "score": 0.9}]),
        "unknown agent",
    ),
    ("bad-tau", "s.json", _set("round_started", "params", {"tau": 7, "k_in": 2, "max_rounds": 5}), "tau must be"),
    ("timestamp", "s.json", _set("round_started", "ts", 1e300), "timestamp"),
    (
        "metadata-mismatch",
        "s.json",
        _edit(lambda d: d["metadata"].update(problem="something else")),
        "metadata does not match",
    ),
    ("event-after-end", "s.json", _edit(lambda d: d["events"].append(d["events"][-1])), "after run_finished"),
    ("events-not-list", "s.json", _edit(lambda d: d.update(events={"a": 1})), "must be a list"),
    ("no-events", "s.json", _edit(lambda d: d.update(events=[])), "no events"),
    ("deep-json", "s.json", b'{"schema_version": 1, "x": ' + b"[" * 100_000 + b"}", "nested too deeply"),
    ("deep-but-parsable", "s.json", b'{"schema_version": 1, "x": ' + b"[" * 60 + b"]" * 60 + b"}", "nested too deeply"),
    ("lone-surrogate", "s.json", _set("run_started", "problem", "\ud800"), "invalid unicode"),
    ("bad-null-marker", "s.toml", b"schema_version = 1\n__null__ = 3\n", "__null__ must be a list"),
    ("wrong-suffix", "s.txt", b"{}", "unsupported file type"),
    ("directory", "dir.json", None, "is a directory"),
    ("missing", "missing.json", None, "no such file"),
]


def _materialise(tmp_path: Path, name: str, content: bytes | None, case: str) -> Path:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    elif case == "directory":
        path.mkdir()
    return path


def test_there_are_at_least_fifteen_cases() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize(("case", "name", "content", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_load_gives_one_clear_line(tmp_path: Path, case: str, name: str, content: bytes | None, fragment: str) -> None:
    path = _materialise(tmp_path, name, content, case)
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    message = str(info.value)
    assert "\n" not in message and len(message) < 500
    assert message.startswith(f"{path}: "), message
    assert fragment in message, message


@pytest.mark.parametrize(("case", "name", "content", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_cli_gives_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, name: str, content: bytes | None, fragment: str
) -> None:
    path = _materialise(tmp_path, name, content, case)
    for argv in (["replay", str(path), "--headless"], ["export", str(path), "--format", "md"]):
        assert cli_main(argv) == 2
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("swarm-tui: error: "), captured.err
        assert fragment in lines[0] and str(path) in lines[0]
        assert captured.out == ""
    assert not (tmp_path / "PWNED").exists()


def test_cli_subprocess_shows_no_traceback(tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_bytes(bytes(range(256)))
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 200_000)
    for path in (junk, deep):
        result = subprocess.run(
            [sys.executable, "-m", "tui", "replay", str(path), "--headless"],
            capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert result.stderr.startswith(f"swarm-tui: error: {path}: ")


def test_import_strings_in_a_file_are_plain_data(tmp_path: Path) -> None:
    hostile = "__import__('os').system('touch PWNED') {{7*7}} ${HOME} `id`"

    def change(data: dict[str, Any]) -> None:
        _event(data, "run_started")["problem"] = hostile
        data["metadata"]["problem"] = hostile
        _event(data, "agent_finished")["public"] = "eval(compile('1','x','exec'))"

    path = tmp_path / "hostile.json"
    path.write_bytes(_edit(change))
    os.chdir(tmp_path)
    session = load_session(path)
    assert session.problem == hostile
    assert session.rounds[0].outputs[0].public == "eval(compile('1','x','exec'))"
    from core.sessions.export import export_session

    for fmt in ("md", "json", "toml", "dot", "mermaid"):
        export_session(session, fmt)
    assert not (tmp_path / "PWNED").exists()


# --- files that are not regular files --------------------------------------------------------------


def _limited_memory() -> None:  # a child that reads /dev/zero without end fails fast, not the machine
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))


@pytest.mark.parametrize(
    ("kind", "fragment"),
    [("fifo", "a named pipe (FIFO), not a session file"), ("dev-zero", "a device, not a session file")],
)
def test_a_fifo_or_a_device_named_json_is_refused_at_once(tmp_path: Path, kind: str, fragment: str) -> None:
    path = tmp_path / "session.json"
    if kind == "fifo":
        os.mkfifo(path)  # opening it for reading would wait for a writer forever
    else:
        path.symlink_to("/dev/zero")  # reading it never ends
    for argv in (["replay", str(path), "--headless"], ["export", str(path), "--format", "md"]):
        result = subprocess.run(
            [sys.executable, "-m", "tui", *argv],
            capture_output=True, text=True, timeout=60, cwd=ROOT, preexec_fn=_limited_memory,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        assert result.returncode == 2, result.stderr[-500:]
        assert result.stderr == f"swarm-tui: error: {path}: {fragment}: only regular files are read\n"
    with pytest.raises(SessionFormatError, match="only regular files"):
        load_session(path)


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    from core.sessions.store import MAX_FILE_BYTES

    path = tmp_path / "big.json"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used
    assert MAX_FILE_BYTES == 64 * 1024 * 1024
    with pytest.raises(SessionFormatError, match="file too large"):
        load_session(path)
