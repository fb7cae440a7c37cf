"""Steering from the other faces: ``--headless --control FILE|-``, ``compare --control``, the session that
records the actions, its Markdown and JSON exports, and the summary counts (docs/steering.md)."""

from __future__ import annotations

import json
from pathlib import Path

from core.runtime import events as ev
from core.sessions.export import export_session
from core.sessions.store import load_session
from tests.support.cli import swarm
from tests.support.paths import FIXTURES

SCRIPT = "\n".join([
    "# what if the user had told the Tester at round 2",
    '{"at_round": 2, "action": "note", "to": "Tester", "text": "CONTROL-NOTE: check the empty string"}',
    '{"at_round": 2, "action": "pin", "src": "Researcher", "dst": "Tester", "rounds": 1}',
    "",
    '{"action": "shout"}',
    "not json at all",
    '{"at_round": 2, "action": "pin", "src": "Tester", "dst": "Tester"}',
    '{"at_round": 2, "action": "note", "to": "Nobody", "text": "hello"}',
])


def test_a_control_file_steers_a_headless_run_end_to_end(tmp_path: Path) -> None:
    control = tmp_path / "steer.jsonl"
    control.write_text(SCRIPT, encoding="utf-8")
    saved = tmp_path / "run.json"
    result = swarm("--headless", "--demo", "--control", str(control), "--save", str(saved),
                   env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    # A malformed line: one line naming the file, the line and what was expected; the run went on.
    assert f"swarm-tui: {control}:5: unknown action 'shout'" in result.stderr
    assert f"swarm-tui: {control}:6: not JSON" in result.stderr
    assert "steering: 2 actions taken, 2 refused" in result.stderr
    assert "Researcher→Tester 0.22 pinned" in result.stderr
    assert "def make_palindrome" in result.stdout
    session = load_session(saved)
    steered = session.steering
    assert [(e.action, e.target, e.accepted) for e in steered] == [
        ("note", "Tester", True), ("pin", "Researcher→Tester", True), ("pin", "Tester→Tester", False),
        ("note", "Nobody", False)]
    assert all(e.round == 1 and e.payload.get("at_round") == 2 for e in steered)
    assert session.rounds[0].steering == steered  # at the barrier after round 1
    md = export_session(session, "md")
    assert "## Steering" in md and "2 actions taken, 2 refused" in md
    assert ("- round 1, after manager: **note** Tester: 'CONTROL-NOTE: check the empty string' (at_round 2, when next)"
            " — taken") in md
    assert "refused: cannot pin Tester→Tester: an agent does not send to itself" in md
    exported = json.loads(export_session(session, "json"))
    assert [e["action"] for e in exported["events"] if e["type"] == "user_steered"] == ["note", "pin", "pin", "note"]


def test_control_from_stdin_is_read_while_the_run_goes(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    script = '{"action": "silence", "agent": "Designer"}\n{"at_round": 2, "action": "stop"}\n'
    result = swarm("--headless", "--demo", "--control", "-", "--save", str(saved), "x", stdin=script,
                   env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)})
    assert result.returncode == 130, result.stderr  # stopped by the user: the run was cut short
    session = load_session(saved)
    assert [(e.action, e.accepted) for e in session.steering] == [("silence", True), ("stop", True)]
    assert session.outcome is not None and session.outcome.detail.startswith("stopped by the user")
    assert session.outcome.final_answer  # the best answer so far


def test_a_control_file_that_cannot_be_read_fails_before_the_run(tmp_path: Path) -> None:
    result = swarm("--headless", "--demo", "--control", str(tmp_path / "missing.jsonl"),
                   env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"swarm-tui: cannot read the control file {tmp_path / 'missing.jsonl'}: No such file or directory"]
    assert not list(tmp_path.glob("*.json"))
    tui = swarm("--demo", "--control", "x.jsonl")
    assert tui.returncode == 2 and "--control goes with --headless" in tui.stderr


def test_compare_steers_every_method_and_counts_it_in_its_rows(tmp_path: Path) -> None:
    control = tmp_path / "steer.jsonl"
    control.write_text('{"at_round": 2, "action": "note", "to": "all", "text": "COMPARE-NOTE"}\n'
                       '{"at_round": 2, "action": "pin", "src": "Researcher", "dst": "Tester"}\n', encoding="utf-8")
    result = swarm("compare", "--demo", "--headless", "--strategy", "dytopo,chain", "--control", str(control),
                   env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    header, _, *rows = result.stdout.strip().splitlines()
    assert header.split()[-1] == "steered"
    by_method = {row.split()[0]: row for row in rows}
    assert by_method["dytopo"].endswith(" 2")
    assert by_method["chain"].endswith("1 (+1 refused)")  # a chain's graph is its own: no pins


def test_steering_events_do_not_change_how_an_old_session_loads() -> None:
    fixtures = FIXTURES
    old = sorted(fixtures.rglob("*.json"))
    sessions = [p for p in old if '"schema_version"' in p.read_text(encoding="utf-8")[:400]]
    assert sessions
    for path in sessions[:5]:
        session = load_session(path)
        assert session.steering == [] and all(r.steering == [] for r in session.rounds)
        assert "## Steering" not in export_session(session, "md")
    assert ev.UserSteered.type not in {e["type"] for p in sessions[:5] for e in load_session(p).events}


def test_bench_steers_every_run_from_its_control_file(tmp_path: Path) -> None:
    control = tmp_path / "steer.jsonl"
    control.write_text('{"at_round": 2, "action": "note", "to": "all", "text": "BENCH-NOTE"}\n{"action": "bogus"}\n',
                       encoding="utf-8")
    out = tmp_path / "bench"
    result = swarm("bench", "humaneval", "--demo", "--limit", "1", "--strategy", "dytopo", "--control", str(control),
                   "--out", str(out), env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert f"swarm-tui bench: {control}:2: unknown action 'bogus'" in result.stderr
    (saved,) = (out / "sessions").rglob("*.json")
    assert [(e.action, e.target, e.accepted) for e in load_session(saved).steering] == [("note", "all", True)]
    stdin = swarm("bench", "humaneval", "--demo", "--limit", "1", "--control", "-", "--out", str(tmp_path / "b2"))
    assert stdin.returncode == 2 and "a benchmark takes a FILE" in stdin.stderr


def test_a_steered_goal_is_the_goal_headless_prints_and_the_session_exports(tmp_path: Path) -> None:
    control = tmp_path / "goal.jsonl"
    control.write_text('{"at_round": 2, "action": "goal", "text": "CONTROL-GOAL: handle unicode"}\n', encoding="utf-8")
    saved = tmp_path / "run.json"
    result = swarm("--headless", "--demo", "--control", str(control), "--save", str(saved),
                   env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    session = load_session(saved)
    managers = session.rounds[0].decision
    assert managers is not None and managers.next_goal
    round2 = session.rounds[1]
    assert (round2.goal, round2.replaced_goal) == ("CONTROL-GOAL: handle unicode", managers.next_goal)
    lines = result.stderr.splitlines()
    at = lines.index("goal (yours): CONTROL-GOAL: handle unicode")  # under round 2's heading, marked as the user's
    assert lines[at + 1] == f"  replaced the manager's goal: {managers.next_goal}"
    assert "round 2/" in "\n".join(lines[at - 3:at])
    md = export_session(session, "md")
    assert (f"**Goal:** CONTROL-GOAL: handle unicode (the user's goal; it replaced the Manager's: "
            f"{managers.next_goal})") in md
    assert session.rounds[0].goal_note == ""  # round 1 ran with the Manager's own


def test_a_demo_session_forks_headless_with_a_control_file_and_no_demo_flag(tmp_path: Path) -> None:
    from sessions import EXAMPLES_DIR

    parent = EXAMPLES_DIR / "example-code.json"
    assert load_session(parent).demo  # a session recorded with --demo
    control = tmp_path / "fork.jsonl"
    control.write_text('{"action": "note", "to": "Tester", "text": "FORK-NOTE: check the empty string"}\n',
                       encoding="utf-8")
    saved = tmp_path / "fork.json"
    result = swarm("replay", str(parent), "--headless", "--fork", "1", "--control", str(control), "--compare",
                   "--save", str(saved), env={"SWARM_TUI_SESSIONS_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "cannot reach" not in result.stderr
    assert "DEMO — scripted model server" in result.stderr  # the scripted server, as the session was
    fork = load_session(saved)
    assert fork.demo and fork.metadata.parent is not None and fork.metadata.parent["round"] == 1
    assert [(e.action, e.target, e.accepted) for e in fork.steering] == [("note", "Tester", True)]
    # --compare: the original and the fork side by side, as swarm-tui compare prints them.
    table = result.stdout.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("method "))
    assert "steered" in table[header]
    assert table[header + 2].startswith("original ") and table[header + 2].rstrip().endswith("0")
    assert table[header + 3].startswith("fork @ round 1 ") and table[header + 3].rstrip().endswith("1")


def test_replay_control_and_compare_need_a_fork(tmp_path: Path) -> None:
    from sessions import EXAMPLES_DIR

    result = swarm("replay", str(EXAMPLES_DIR / "example-code.json"), "--headless", "--compare")
    assert result.returncode == 2 and "--compare goes with --headless --fork ROUND" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_mcp_clients_topology_gives_the_goal_the_round_ran_with() -> None:
    from core.mcp.results import topology

    rounds = topology([ev.RoundStarted(round=2, params={}),
                       ev.GoalReplaced(round=2, goal="the user's goal", replaced="the Manager's")])
    assert rounds[0].goal == "the user's goal" and rounds[0].graphs == []  # a goal, not a graph
