"""The session file's pydantic models (core.sessions.schema): values outside a fixed set, missing fields and
wrong types deep inside a field each end in one line naming the event, the field and what it must be;
the values of a fixed set come back as their enums."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from core.runtime import events as ev
from core.sessions.model import SessionFormatError
from core.sessions.store import load_session
from sessions import EXAMPLES_DIR

BASE: dict[str, Any] = json.loads((EXAMPLES_DIR / "example-math.json").read_text(encoding="utf-8"))


def _first(data: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(e for e in data["events"] if e["type"] == kind)


def _status(d: dict[str, Any]) -> None:
    _first(d, "agent_finished")["status"] = "exploded"


def _missing(d: dict[str, Any]) -> None:
    del _first(d, "agent_finished")["agent"]


def _embedding(d: dict[str, Any]) -> None:
    _first(d, "topology_built")["query_embeddings"][1][3] = "x"


def _descriptors(d: dict[str, Any]) -> None:
    _first(d, "descriptors_ready")["descriptors"] = {"Solver": {"query": 3}}


def _parent(d: dict[str, Any]) -> None:
    _first(d, "run_started")["parent"] = {"session": "a.json", "round": -1}


def _version(d: dict[str, Any]) -> None:
    d["app_version"] = 7


CASES = [
    ("enum", _status, "field 'status' must be one of 'done', 'unparsed', 'failed', got text"),
    ("missing", _missing, "(agent_finished): field 'agent' is missing"),
    ("deep-list", _embedding, "field 'query_embeddings' item 1 item 3 must be a number, got text"),
    ("deep-dict", _descriptors, "field 'descriptors' key 'Solver' key 'query' must be text, got a whole number"),
    ("parent", _parent, "parent must be {session: text, round: whole number >= 0}"),
    ("top-level", _version, "app_version must be text, got a whole number"),
]


@pytest.mark.parametrize(("case", "change", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_a_wrong_value_is_one_line_naming_the_field(tmp_path: Path, case: str, change: Any, fragment: str) -> None:
    data = copy.deepcopy(BASE)
    change(data)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SessionFormatError) as info:
        load_session(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: ") and fragment in message, message


def test_values_of_a_fixed_set_load_as_their_enums() -> None:
    session = load_session(EXAMPLES_DIR / "example-math.json")
    events = session.replay_events()
    finished = next(e for e in events if isinstance(e, ev.AgentFinished))
    assert type(finished.status) is ev.CallStatus and finished.status == "done"
    assert type(session.metadata.domain).__name__ == "DomainName"
    assert session.outcome is not None and type(session.outcome.reason).__name__ == "EndReason"
