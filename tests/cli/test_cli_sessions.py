"""``swarm-tui sessions | export | replay`` as a user runs them."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.sessions.store import load_session
from sessions import EXAMPLES_DIR
from tests.support.cli import swarm
from tests.support.paths import ROOT
from tui.cli.headless import ProgressPrinter
from tui.cli.sessions import format_table
from tui.entry import main as cli_main

CODE = EXAMPLES_DIR / "example-code.json"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli_main(argv)
    except SystemExit as exc:  # argparse errors exit through OneLineParser
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_sessions_lists_the_shipped_examples_in_a_subprocess() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tui", "sessions", "--dir", str(EXAMPLES_DIR)],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("date"))
    assert header.split() == ["date", "problem", "domain", "method", "done", "outcome", "tokens", "file"]
    code_row = next(line for line in lines if "example-code.json" in line)
    session = load_session(CODE)
    assert "[demo] Complete these two functions" in code_row
    assert f" {session.completed_rounds} rounds " in code_row and str(session.tokens) in code_row  # its unit
    assert " dytopo " in code_row
    assert " manager " in code_row and " code " in code_row
    assert any("example-math.json" in line for line in lines)


def test_sessions_default_dir_comes_from_settings_and_shows_examples_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARM_TUI_SESSIONS_DIR", str(tmp_path))
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    code, out, err = run(["sessions"], capsys)
    assert code == 0
    assert f"no sessions in {tmp_path}" in out and "example-code.json" in out
    assert err.count("\n") == 1 and "skipped" in err and "broken.json" in err


@pytest.mark.parametrize("fmt", ["md", "json", "toml", "dot", "mermaid"])
def test_export_writes_each_format(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_path = tmp_path / f"out.{fmt}"
    code, out, err = run(["export", str(CODE), "--format", fmt, "-o", str(out_path)], capsys)
    assert code == 0 and out == "" and str(out_path) in err
    text = out_path.read_text(encoding="utf-8")
    session = load_session(CODE)
    if fmt in ("json", "toml"):
        assert load_session(out_path) == session
    else:
        edge = next(e for r in session.rounds for e in r.edges)
        assert f"{edge.score:.2f}" in text
    # Without -o the same text goes to stdout.
    code, out, _ = run(["export", str(CODE), "--format", fmt], capsys)
    assert code == 0 and out == text


def test_replay_headless_by_example_name_prints_what_the_live_printer_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["replay", "example-code", "--headless"], capsys)
    assert code == 0, err
    session = load_session(CODE)
    expected = io.StringIO()
    printer = ProgressPrinter(expected)
    for event in session.replay_events():
        printer(event)
    assert expected.getvalue() in out
    for record in session.rounds:
        assert f"── round {record.round}/" in out
    assert session.outcome is not None and session.outcome.final_answer in out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["export", str(CODE)], "--format"),
        (["export", str(CODE), "--format", "pdf"], "invalid choice"),
        (["export", str(CODE), "--format", "md", "-o", "/no/such/dir/out.md"], "cannot write"),
        (["replay"], "file"),
        (["replay", "no-such-session", "--headless"], "no-such-session: no such file"),
        (["sessions", "--dir", str(CODE)], "not a directory"),
        (["replay", str(CODE), "--fork", "1", "--headless", "--demo", "--max-rounds", "1"], "pass --max-rounds 2"),
        (["replay", str(CODE), "--fork", "1", "--headless", "--demo", "--save", "fork.txt"], ".json or .toml"),
        (["sessions", "--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and fragment in lines[0], err
    assert "Traceback" not in err


def test_sessions_name_the_method_and_its_unit_and_skip_compare_exports(tmp_path: Path) -> None:
    """A DMoA run counts steps, not rounds; the app's own comparison summary (NAME.summary.json) is not
    reported as "not a swarm-tui session"."""
    from core.sessions.store import list_sessions

    env = {"SWARM_TUI_SESSIONS_DIR": str(tmp_path)}
    ran = swarm("--headless", "--demo", "--strategy", "dmoa", "--domain", "math", env=env)
    assert ran.returncode == 0, ran.stderr
    (tmp_path / "x.summary.json").write_text('{"summary": []}', encoding="utf-8")
    listing = list_sessions(tmp_path)
    assert not listing.errors
    line = format_table(listing).splitlines()[2]
    assert " dmoa " in line and " 2 steps " in line and "rounds" not in line
