"""Steering's API: the control-file schema, the routing rules for pins and cuts, the control's queue to the
next barrier, the event, and which actions each method takes (docs/steering.md)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from core.methods.catalogue import method_names, steering_of
from core.routing.dytopo import KIND_PINNED, KIND_ROUTED, RemovalReason, check_pin, route_from_similarity
from core.runtime import events as ev
from core.runtime.control import ControlMode, Params, RunControl, StepBoundary
from core.runtime.steering import (
    SteerAction,
    SteerError,
    SteerKind,
    parse_action,
    parse_control_line,
    unknown_agent,
)
from tests.support.methods import steering_refusal

# --- the control-file schema (issue 33, item 10) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"at_round": 2, "action": "note", "to": "Tester", "text": "check n=0", "when": "next"}',
         SteerAction(SteerKind.NOTE, to="Tester", text="check n=0", at_round=2)),
        ('{"action": "note", "to": "all", "text": "be brief", "when": "now"}',
         SteerAction(SteerKind.NOTE, to="all", text="be brief", when="now")),
        ('{"action": "goal", "text": "Write the tests first"}',
         SteerAction(SteerKind.GOAL, text="Write the tests first")),
        ('{"action": "pin", "src": "Developer", "dst": "Tester", "rounds": 1}',
         SteerAction(SteerKind.PIN, src="Developer", dst="Tester", rounds=1)),
        ('{"action": "cut", "src": "A", "dst": "B"}', SteerAction(SteerKind.CUT, src="A", dst="B")),
        ('{"action": "release", "src": "A", "dst": "B"}', SteerAction(SteerKind.RELEASE, src="A", dst="B")),
        ('{"action": "silence", "agent": "X"}', SteerAction(SteerKind.SILENCE, agent="X")),
        ('{"action": "restore", "agent": "X"}', SteerAction(SteerKind.RESTORE, agent="X")),
        ('{"action": "retry", "agent": "X"}', SteerAction(SteerKind.RETRY, agent="X")),
        ('{"action": "stop"}', SteerAction(SteerKind.STOP)),
        ('{"action": "continue"}', SteerAction(SteerKind.CONTINUE)),
        ('{"action": "agent", "agent": "X", "temperature": 0.2}',
         SteerAction(SteerKind.AGENT, agent="X", payload={"temperature": 0.2})),
        ('{"action": "edge_add", "src": "A", "dst": "B", "type": "feedback"}',
         SteerAction(SteerKind.EDGE_ADD, src="A", dst="B", payload={"type": "feedback"})),
    ],
)
def test_every_schema_line_of_the_issue_reads_back_as_its_action(line: str, expected: SteerAction) -> None:
    action = parse_control_line(line, source="steer.jsonl", line_no=1)
    assert action == expected
    assert parse_action(action.to_dict()) == action  # what the TUI or MCP writes, a control file reads


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("{not json", "steer.jsonl:7: not JSON"),
        ('{"action": "shout"}', 'steer.jsonl:7: unknown action \'shout\': "action" is one of note, goal'),
        ('{"action": "note", "to": "Tester"}', 'steer.jsonl:7: "text" is missing: note takes "action", "to", "text"'),
        ('{"action": "note", "to": "Tester", "text": "  "}', '"text" must be a non-empty string'),
        ('{"action": "pin", "src": "A", "dst": "B", "rounds": 0}', '"rounds" must be a whole number from 1'),
        ('{"action": "stop", "agent": "X"}', "unknown key 'agent': stop takes \"action\""),
        ('{"action": "note", "to": "T", "text": "x", "when": "later"}', '"when" is "next" or "now"'),
        ('{"action": "agent", "agent": "X"}', "agent changes nothing"),
        ('[1, 2]', 'expected a JSON object with an "action"'),
    ],
)
def test_a_malformed_control_line_names_file_line_and_what_was_expected(line: str, says: str) -> None:
    with pytest.raises(SteerError) as caught:
        parse_control_line(line, source="steer.jsonl", line_no=7)
    message = str(caught.value)
    assert says in message and message.startswith("steer.jsonl:7: ") and "\n" not in message


def test_an_unknown_agent_is_named_with_the_team() -> None:
    action = SteerAction(SteerKind.PIN, src="Developer", dst="Nobody")
    why = unknown_agent(action, ["Developer", "Tester"])
    assert why == "no agent 'Nobody' in this team (agents: Developer, Tester)"
    assert unknown_agent(SteerAction(SteerKind.NOTE, to="all", text="x"), ["Developer"]) == ""


# --- routing: pins and cuts --------------------------------------------------------------------------------

NAMES = ["A", "B", "C", "D"]
# sim[i][j] = cos(query_i, key_j): j provides for i.
SIM = np.array([
    [1.0, 0.9, 0.8, 0.1],
    [0.7, 1.0, 0.6, 0.2],
    [0.5, 0.4, 1.0, 0.3],
    [0.9, 0.85, 0.2, 1.0],
])


def _pairs(result: object, kind: str | None = None) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in result.edges if kind is None or e.kind == kind}  # type: ignore[attr-defined]


def test_without_steering_the_graph_is_as_before() -> None:
    plain = route_from_similarity(NAMES, SIM, 0.5, 1)
    steered = route_from_similarity(NAMES, SIM, 0.5, 1, pinned=frozenset(), cut=frozenset())
    assert plain == steered


def test_a_pin_is_kept_below_tau_and_takes_the_weakest_routed_place() -> None:
    # Into A: B (0.9) and C (0.8) pass tau 0.5; k_in 2 keeps both. Pinning D→A (0.1, below tau) keeps D→A
    # and drops the weaker routed one, C→A, by k_in.
    before = route_from_similarity(NAMES, SIM, 0.5, 2, break_cycles=False)
    assert {("B", "A"), ("C", "A")} <= _pairs(before)
    after = route_from_similarity(NAMES, SIM, 0.5, 2, break_cycles=False, pinned=frozenset({("D", "A")}))
    into_a = {e.src: e for e in after.edges if e.dst == "A"}
    assert set(into_a) == {"B", "D"} and into_a["D"].kind == KIND_PINNED and into_a["B"].kind == KIND_ROUTED
    assert any((r.src, r.dst, r.reason) == ("C", "A", "k_in") for r in after.removed)


def test_a_cut_edge_is_in_no_graph_and_listed_as_cut_by_user() -> None:
    result = route_from_similarity(NAMES, SIM, 0.0, 3, cut=frozenset({("B", "A"), ("C", "D")}))
    assert not _pairs(result) & {("B", "A"), ("C", "D")}
    cut = {(r.src, r.dst) for r in result.removed if r.reason == RemovalReason.CUT}
    assert cut == {("B", "A"), ("C", "D")}


def test_cycle_breaking_never_removes_a_pin() -> None:
    # A and B provide for each other strongly; with A→B pinned at its weak score the cycle's other edge goes.
    sim = np.array([[1.0, 0.9], [0.3, 1.0]])  # B→A 0.9, A→B 0.3
    plain = route_from_similarity(["A", "B"], sim, 0.2, 1)
    assert _pairs(plain) == {("B", "A")}
    pinned = route_from_similarity(["A", "B"], sim, 0.2, 1, pinned=frozenset({("A", "B")}))
    assert _pairs(pinned) == {("A", "B")} and pinned.acyclic
    assert [(r.src, r.dst, r.reason) for r in pinned.removed] == [("B", "A", "cycle")]


def test_a_silenced_agent_has_no_edge_and_is_listed_as_not_running() -> None:
    result = route_from_similarity(NAMES, SIM, 0.0, 3, pinned=frozenset({("B", "C")}), silenced=frozenset({"B"}))
    assert all("B" not in pair for pair in _pairs(result))
    assert result.inactive == ["B"] and not result.typed


def test_pin_refusals_are_one_line_naming_the_cycle() -> None:
    assert check_pin(frozenset(), "A", "A", acyclic=True) == "cannot pin A→A: an agent does not send to itself"
    pins = frozenset({("A", "B"), ("B", "C")})
    why = check_pin(pins, "C", "A", acyclic=True)
    assert "would close the cycle A→B→C→A" in why and "\n" not in why
    assert check_pin(pins, "C", "A", acyclic=False) == ""  # single-pass delivers at a barrier: cycles are fine
    assert check_pin(pins, "A", "C", acyclic=True) == ""


# --- the control: queued to the next barrier ---------------------------------------------------------------


def _control() -> tuple[RunControl, list[tuple[str, str]], list[SteerAction]]:
    control = RunControl(Params(0.3, 2, 3), 4)
    seen: list[tuple[str, str]] = []
    applied: list[SteerAction] = []

    def hook(action: SteerAction) -> str:
        applied.append(action)
        return "" if action.action is not SteerKind.CUT else "refused for the test"

    control.steer_hook = hook
    control.on_steered = lambda action, reason: seen.append((action.action.value, reason))
    return control, seen, applied


async def test_an_action_waits_for_the_next_barrier_and_at_round_for_its_round() -> None:
    control, seen, applied = _control()
    control.steer(SteerAction(SteerKind.GOAL, text="new"))
    control.steer(SteerAction(SteerKind.NOTE, to="A", text="later", at_round=3))
    assert applied == [] and len(control.pending_steering) == 2
    await control.checkpoint(StepBoundary.PHASE, 1)
    assert [a.action for a in applied] == [SteerKind.GOAL]
    await control.checkpoint(StepBoundary.ROUND, 2)
    assert len(applied) == 1
    await control.checkpoint(StepBoundary.ROUND, 3)
    assert [a.text for a in applied] == ["new", "later"] and control.pending_steering == []
    assert seen == [("goal", ""), ("note", "")]


async def test_now_applies_at_once_and_a_paused_run_applies_at_once() -> None:
    control, seen, applied = _control()
    control.steer(SteerAction(SteerKind.NOTE, to="A", text="x", when="now"))
    assert len(applied) == 1
    control.mode = ControlMode.STEP
    waiting = asyncio.create_task(control.checkpoint(StepBoundary.PHASE, 1))
    await asyncio.sleep(0)
    assert control.waiting
    control.steer(SteerAction(SteerKind.CUT, src="A", dst="B"))
    assert seen[-1] == ("cut", "refused for the test")
    control.resume()
    await waiting


async def test_after_the_run_ended_steering_is_one_line_and_what_waited_is_refused() -> None:
    control, seen, _ = _control()
    control.steer(SteerAction(SteerKind.RETRY, agent="A"))
    control.end_steering()
    assert seen == [("retry", "the run ended before the barrier it waited for")]
    with pytest.raises(SteerError, match=r"^the run has ended: stop was not taken$"):
        control.steer(SteerAction(SteerKind.STOP))


async def test_stop_needs_no_hook_and_ends_the_run_at_the_barrier() -> None:
    control = RunControl(Params(0.3, 2, 3), 4)
    control.steer(SteerAction(SteerKind.STOP))
    with pytest.raises(asyncio.CancelledError):
        await control.checkpoint(StepBoundary.ROUND, 2)
    assert control.cancelled and "best answer so far" in control.stop_reason
    control2 = RunControl(Params(0.3, 2, 3), 4)
    reasons: list[str] = []
    control2.on_steered = lambda action, reason: reasons.append(reason)
    control2.steer(SteerAction(SteerKind.NOTE, to="A", text="x", when="now"))
    assert reasons == ["this method takes no steering actions"]


def test_the_event_round_trips() -> None:
    event = ev.UserSteered(round=2, phase="routing", action="pin", target="A→B", payload={"src": "A", "dst": "B"},
                           accepted=False, reason="cannot pin")
    assert ev.event_from_dict(event.to_dict()) == event


# --- the catalogue ---------------------------------------------------------------------------------------


def test_every_method_declares_its_actions_and_says_why_not_in_one_line() -> None:
    assert SteerKind.PIN in steering_of("dytopo") and SteerKind.NOTE in steering_of("dytopo")
    assert steering_of("topoweaver") >= {SteerKind.PLAN, SteerKind.STOP}
    assert steering_of("topodim") >= {SteerKind.EDGE_ADD, SteerKind.EDGE_REMOVE}
    assert steering_of("dmoa") >= {SteerKind.FORCE, SteerKind.EXCLUDE, SteerKind.NOTE}
    for name in method_names():
        assert SteerKind.STOP in steering_of(name)
        for kind in SteerKind:
            why = steering_refusal(name, kind)
            assert (why == "") == (kind in steering_of(name))
            assert "\n" not in why
    assert steering_refusal("chain", "pin").startswith("chain cannot take pin: its graph is the baseline's own")
