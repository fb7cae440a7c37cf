"""Sessions saved before the layers refactor (app 0.1, main at b459718) still load, replay and re-route.

The fixtures were saved by that revision's `swarm-tui --demo --headless --strategy NAME --save FILE`.
Their replays must rebuild every event, each method's own event types included (DMoA's, TopoWeaver-R1's,
TopoDIM's), now that the method registry no longer imports the methods on demand.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from core.runtime.config import DomainName, Settings
from core.runtime.rosters import Team
from core.runtime.teams import resolve_team, with_recorded_team, with_team
from core.sessions.store import load_session
from core.sessions.whatif import reroute_session, what_if_refusal
from tests.support.paths import FIXTURES, ROOT

SESSIONS_0_1 = FIXTURES / "sessions_0.1"
STRATEGIES = ("dytopo", "single", "dmoa", "topoweaver", "topodim")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_session_saved_before_the_refactor_loads_and_replays(strategy: str) -> None:
    session = load_session(SESSIONS_0_1 / f"{strategy}.json")
    assert session.metadata.strategy == strategy
    assert session.outcome is not None and session.outcome.final_answer
    replayed = session.replay_events()
    assert len(replayed) == len(session.events)
    assert [e.type for e in replayed] == [e["type"] for e in session.events]


def test_a_saved_dytopo_session_re_routes_at_another_tau() -> None:
    session = load_session(SESSIONS_0_1 / "dytopo.json")
    assert what_if_refusal(session) == ""
    diffs = reroute_session(session, tau=0.9, k_in=1)
    assert diffs, "no routed round to re-route"


@pytest.mark.parametrize("strategy", ("dmoa", "topoweaver", "topodim"))
def test_a_fresh_process_reads_a_methods_own_events(strategy: str) -> None:
    """In a new interpreter nothing has imported the methods yet: reading the session must load them."""
    code = (
        "import sys; from core.sessions.store import load_session; "
        "s = load_session(sys.argv[1]); print(len(s.replay_events()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(SESSIONS_0_1 / f"{strategy}.json")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) > 0


SESSIONS_A91DED2 = FIXTURES / "sessions_main_a91ded2"  # saved before the team type was renamed Team -> Team


def test_a_user_team_session_saved_before_the_team_rename_forks_with_its_team() -> None:
    """team.json: `swarm-tui --demo --headless --team six.toml --max-rounds 2 --save team.json` at main a91ded2.
    Its recorded team becomes a Team again, named as the user named it, with its own workers."""
    session = load_session(SESSIONS_A91DED2 / "team.json")
    assert session.metadata.domain == DomainName.GENERAL and len(session.rounds) == 2
    team = resolve_team(with_recorded_team(Settings(), session.metadata.team))
    assert isinstance(team, Team)
    assert (team.custom_name, team.team_name, team.name) == ("six", "six", "general")
    assert team.worker_names == ["Economist", "Engineer", "Planner"]
    assert team.manager.description == "Leads the planning."


def test_a_team_file_written_before_the_rename_still_loads() -> None:
    team = resolve_team(with_team(replace(Settings(), team=str(SESSIONS_A91DED2 / "six.toml"))))
    assert (team.custom_name, team.name, team.answer_role) == ("six", "general", "Planner")
