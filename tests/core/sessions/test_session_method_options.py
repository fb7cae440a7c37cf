"""A saved session says how its method was configured (``method_options``: every option's value as the run
resolved it, defaults included), and sessions saved before that field existed still load, with {}.

Fixtures: tests/fixtures/sessions_0.1 (app 0.1, before the field) and sessions_main_43a94cf (saved by
main at 43a94cf with ``swarm-tui --demo --headless --strategy dmoa --save FILE``, the first with it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.methods.catalogue import get_method_info
from core.sessions.export import export_session
from core.sessions.store import load_session, save_session
from tests.support.paths import FIXTURES


@pytest.mark.parametrize("strategy", ("dytopo", "single", "dmoa", "topoweaver", "topodim"))
def test_a_session_saved_before_options_were_recorded_loads_without_them(strategy: str) -> None:
    session = load_session(FIXTURES / "sessions_0.1" / f"{strategy}.json")
    assert session.method_options == {}
    assert "method options: none recorded" in export_session(session, "md")


def test_a_session_saved_by_main_keeps_every_option_it_ran_with(tmp_path: Path) -> None:
    session = load_session(FIXTURES / "sessions_main_43a94cf" / "dmoa.json")
    options = session.method_options
    assert set(options) <= {spec.name for spec in get_method_info("dmoa").options}  # names still known
    assert options["query_in"] == "system" and options["router"] == "gru" and options["adaptive_k"] is True
    assert "method options: adaptive_k=true, collect=false, k=0" in export_session(session, "md")
    again = load_session(save_session(session, tmp_path / "again.json"))  # and it survives a re-save
    assert again.method_options == options
