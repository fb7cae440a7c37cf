"""Issue 46 for forks of the methods that call one agent more than once (DMoA, TopoWeaver-R1): a fork rebuilds
each agent's conversation from the parent's recorded events, so the fork's first request of an agent the parent
had called begins with the parent's last request of that agent plus the reply it kept, byte for byte, as a live
continuation would (and, the scripted server being deterministic, is the request the parent sent next)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from core.demo.scripts import demo_script
from core.evaluation.extract import extract_tests
from core.methods.dmoa.selector import SELECTOR
from core.methods.dmoa.summary import SUMMARIZER
from core.methods.dytopo.history import SUMMARY_ONLY
from core.methods.topoweaver.demo import topoweaver_script
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.control import Params, RunControl
from core.runtime.scripted import RequestInfo
from core.runtime.steering import SteerAction, SteerKind
from core.sessions.fork import fork_point
from core.sessions.model import session_from_events
from core.sessions.store import load_session
from tests.support.dmoa import dmoa_settings, same_two
from tests.support.paths import ROOT
from tests.support.request_log import by_agent, continues, kept_replies, logged_run
from tests.support.topoweaver import CHAIN, script_with


def _assert_fork_continues(parent: list[RequestInfo], events: list[ev.Event], forked: list[RequestInfo],
                           at: int, agents: set[str], differ: frozenset[str] = frozenset()) -> None:
    """Each of ``agents``' first request in the fork (after round ``at``) continues its parent's conversation
    and, unless the agent is in ``differ``, is the request the parent sent next."""
    before, after, kept = by_agent(parent), by_agent(forked), kept_replies(events)
    for agent in agents:
        last = [r for r in before[agent] if r.round <= at][-1]
        first = after[agent][0]
        assert first.round == at + 1, agent
        assert continues(first, last, kept[(agent, last.call, last.round)]), agent
        following = [r for r in before[agent] if r.round == at + 1 and r.call == first.call]
        assert following and (agent in differ or first.messages == following[0].messages), agent


async def test_a_dmoa_fork_continues_every_callers_conversation(embedder: Any) -> None:
    parent, events = await logged_run(embedder, dmoa_settings(), same_two)
    assert max(r.round for r in parent) == 3  # the demo's Summarizer ends code at step 3
    point = fork_point(session_from_events(events), 2, "parent.json")
    forked, fork_events = await logged_run(embedder, dmoa_settings(), same_two, fork=point)
    assert {r.round for r in forked} == {3}
    _assert_fork_continues(parent, events, forked, 2, {"Developer", "Tester", SUMMARIZER, SELECTOR})
    assert fork_events[-1].reason == "summarizer"  # type: ignore[attr-defined]


async def test_a_dmoa_fork_carries_the_test_feedback_its_agents_read(embedder: Any) -> None:
    """With code execution on, each step's test results reach the Summarizer and the next step's agents: the
    fork rebuilds those turns with them (recorded in the step's event) and its first step reads them too."""
    settings = replace(dmoa_settings(), execute_code=True)
    parent, events = await logged_run(embedder, settings, same_two)
    assert any(isinstance(e, ev.TestRun) for e in events)
    point = fork_point(session_from_events(events), 1, "parent.json")
    forked, _ = await logged_run(embedder, settings, same_two, fork=point)
    # The Summarizer's new turn holds step 2's test results: the fork's check had the tests the parent's Tester
    # wrote before the fork (taken in again from the recorded step), so they are the parent's step 2 results.
    _assert_fork_continues(parent, events, forked, 1, {"Developer", "Tester", SUMMARIZER, SELECTOR})
    assert "Ran Developer's latest code" in str(by_agent(forked)["Developer"][0].messages[-1]["content"])


async def test_a_dmoa_fork_gives_back_the_notes_a_person_sent(embedder: Any) -> None:
    """A note to all reached step 1's agents, a note to the Tester its next call: the rebuilt turns hold them."""
    control = RunControl(Params(0.3, 2, 5), 4)
    control.steer(SteerAction(SteerKind.NOTE, to="all", text="NOTE-ALL: mind the empty string"))
    control.steer(SteerAction(SteerKind.NOTE, to="Tester", text="NOTE-TESTER: add a test for 'ab'"))
    parent, events = await logged_run(embedder, dmoa_settings(), same_two, control=control)
    assert "NOTE-TESTER" in str(by_agent(parent)["Tester"][0].messages[-1]["content"])
    fork = fork_point(session_from_events(events), 2, "p")
    forked, _ = await logged_run(embedder, dmoa_settings(), same_two, fork=fork)
    _assert_fork_continues(parent, events, forked, 2, {"Developer", "Tester", SUMMARIZER, SELECTOR})


async def test_a_note_taken_after_the_fork_point_reaches_the_forks_next_step(embedder: Any) -> None:
    """A note to all taken at the barrier after step 2 was for step 3's agents: a fork from step 2 delivers it."""
    _, events = await logged_run(embedder, dmoa_settings(), same_two)
    end = next(i for i, e in enumerate(events) if isinstance(e, ev.RoundFinished) and e.round == 2)
    note = ev.UserSteered(round=2, phase="summarize", action=SteerKind.NOTE.value, target="all",
                          payload={"to": "all", "text": "NOTE-AFTER-2: keep it short", "when": "next"})
    forked, _ = await logged_run(embedder, dmoa_settings(), same_two, fork=fork_point(
        session_from_events([*events[:end + 1], note, *events[end + 1:]]), 2, "p"))
    firsts = by_agent(forked)
    assert all("NOTE-AFTER-2" in str(firsts[agent][0].messages[-1]["content"]) for agent in ("Developer", "Tester"))


async def test_a_dmoa_fork_of_a_session_without_the_raw_replies_starts_fresh_with_a_note(embedder: Any) -> None:
    parent, events = await logged_run(embedder, dmoa_settings(), same_two)
    old = [replace(e, raw="") if isinstance(e, ev.AgentFinished) and e.agent == "Developer" else e for e in events]
    point = fork_point(session_from_events(old), 2, "parent.json")
    forked, fork_events = await logged_run(embedder, dmoa_settings(), same_two, fork=point)
    notes = [e.message for e in fork_events if isinstance(e, ev.Notice) and "start fresh" in e.message]
    assert len(notes) == 1 and "Developer" in notes[0]
    first = by_agent(forked)["Developer"][0]
    assert [m["role"] for m in first.messages] == ["system", "user"]  # a fresh conversation, no error
    _assert_fork_continues(parent, events, forked, 2, {"Tester", SUMMARIZER})
    assert fork_events[-1].reason == "summarizer"  # type: ignore[attr-defined]


async def test_a_dmoa_fork_in_the_paper_order_rebuilds_every_request(embedder: Any) -> None:
    """No conversation; the fork's first step still reads the test results the step before it left."""
    settings = replace(dmoa_settings(prompt_order="paper"), execute_code=True)
    parent, events = await logged_run(embedder, settings, same_two)
    forked, _ = await logged_run(embedder, settings, same_two, fork=fork_point(session_from_events(events), 1, "p"))
    assert forked and all([m["role"] for m in r.messages] == ["system", "user"] for r in forked if not r.is_repair)
    first, sent = by_agent(forked)["Developer"][0], by_agent(parent)["Developer"][1]
    assert first.round == sent.round == 2 and first.messages == sent.messages
    assert "TEST RESULTS" in str(first.messages[-1]["content"])


async def test_a_topoweaver_fork_continues_the_orchestrators_and_a_reused_agents_conversation(embedder: Any) -> None:
    """The scripted plans reuse coder_1 in turn 2: a fork after turn 1 sends the Orchestrator's and coder_1's
    turn-2 requests as continuations of their turn-1 requests."""
    settings = Settings(domain="code", strategy="topoweaver", max_retries=0)
    parent, events = await logged_run(embedder, settings, topoweaver_script)
    assert max(r.round for r in parent) == 2
    point = fork_point(session_from_events(events), 1, "parent.json")
    forked, fork_events = await logged_run(embedder, settings, topoweaver_script, fork=point)
    assert {r.round for r in forked} == {2}
    _assert_fork_continues(parent, events, forked, 1, {"Orchestrator", "coder_1"})
    assert fork_events[-1].reason == "passed"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("strategy", "caller"), [("dmoa", SUMMARIZER), ("topoweaver", "Orchestrator")])
async def test_a_session_saved_before_conversations_forks_into_them(embedder: Any, strategy: str, caller: str) -> None:
    """A session recorded before conversations existed holds the raw replies: its fork continues them."""
    session = load_session(ROOT / "tests" / "fixtures" / "sessions_0.1" / f"{strategy}.json")
    point = fork_point(session, 1, "old.json")
    settings = Settings(domain="code", strategy=strategy, max_retries=0)
    forked, events = await logged_run(embedder, settings, demo_script, fork=point)
    replies = [e.raw for e in point.history if isinstance(e, ev.AgentFinished) and e.agent == caller]
    first = by_agent(forked)[caller][0]
    assert first.round == 2 and first.messages[2] == {"role": "assistant", "content": replies[-1]}
    assert not [e for e in events if isinstance(e, ev.Notice) and "start fresh" in e.message]



async def test_a_dmoa_fork_trims_the_rebuilt_conversations_as_the_live_run_did(embedder: Any) -> None:
    """Over a small context budget the conversations dropped their oldest turns at step 2: the rebuild drops the
    same ones (silently: the parent's trims are in the history it re-emits), so the fork's step 3 sends what the
    parent's step 3 sent (which trims again: the prefix breaks once per trim)."""
    settings = Settings(domain="code", strategy="dmoa", context_budget_tokens=700,
                        strategy_options={"dmoa": {"router": "llm", "l_max": 4}})
    parent, events = await logged_run(embedder, settings, same_two)
    trims = [(e.agent, e.dropped) for e in events if isinstance(e, ev.MemoryTrimmed) and e.round <= 2]
    assert trims and max(r.round for r in parent) == 3
    forked, fork_events = await logged_run(embedder, settings, same_two,
                                           fork=fork_point(session_from_events(events), 2, "p"))
    before, after = by_agent(parent), by_agent(forked)
    for agent in ("Developer", "Tester", SUMMARIZER, SELECTOR):
        assert after[agent][0].messages == next(r for r in before[agent] if r.round == 3).messages, agent
    again = [(e.agent, e.dropped) for e in fork_events if isinstance(e, ev.MemoryTrimmed) and e.round <= 2]
    assert again == trims  # re-emitted once, not reported again by the rebuild


async def test_a_topoweaver_fork_keeps_the_orchestrators_rejected_plan_beside_the_persons(embedder: Any) -> None:
    """Turn 1's reply held no plan and a person's plan ran instead: the history the Orchestrator read in turn 2
    says its own plan was rejected, and so does the fork's rebuilt turn 2."""
    control = RunControl(Params(0.3, 2, 5), 4)
    control.steer(SteerAction(SteerKind.PLAN, text=CHAIN))
    settings = Settings(domain="code", strategy="topoweaver", max_retries=0)
    script = script_with({1: "I would start with a coder."})
    parent, events = await logged_run(embedder, settings, script, control=control)
    assert max(r.round for r in parent) == 2
    turn2 = next(r for r in by_agent(parent)["Orchestrator"] if r.round == 2)
    assert "Your plan was rejected" in str(turn2.messages[-1]["content"])
    forked, _ = await logged_run(embedder, settings, script, fork=fork_point(session_from_events(events), 1, "p"))
    _assert_fork_continues(parent, events, forked, 1, {"Orchestrator", "coder_1"})


def _dytopo_checked(protocol: str) -> Settings:
    return Settings(domain="code", protocol=protocol, execute_code=True, convergence_threshold=1.0)


def _sent(requests: list[RequestInfo]) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    return {(r.role, r.call, r.round): r.messages for r in requests if not r.is_repair}


def _checks(events: list[ev.Event], after: int) -> list[tuple[int, str, str, str, str | None]]:
    return [(e.round, e.outcome, e.detail, e.tests_agent, e.feedback) for e in events
            if isinstance(e, ev.TestRun) and e.round > after]


@pytest.mark.parametrize("protocol", ["phased", "single-pass"])
async def test_a_dytopo_fork_checks_the_code_against_the_tests_its_parent_had(embedder: Any, protocol: str) -> None:
    """The demo's Tester writes its tests in round 1 only: the parent's round-2 check ran them. A fork from round 1
    takes the recorded rounds' code and tests into its check again, so its round-2 check is the parent's; and its
    agents remember round 1's results as the parent's were told them (recorded in TestRun.feedback)."""
    settings = _dytopo_checked(protocol)
    parent, events = await logged_run(embedder, settings, demo_script)
    tester = [e for e in events if isinstance(e, ev.AgentFinished) and e.agent == "Tester" and e.round == 2
              and e.call in (ev.CallKind.WORK, ev.CallKind.SINGLE_PASS)]
    assert tester and not extract_tests(tester[-1].public)  # round 2's check ran the tests of round 1
    forked, fork_events = await logged_run(embedder, settings, demo_script,
                                           fork=fork_point(session_from_events(events), 1, "p"))
    assert _checks(fork_events, 1) == _checks(events, 1) and _checks(events, 1)[0][3] == "Tester"
    before, after = _sent(parent), _sent(forked)
    fed = [key for key, messages in after.items() if any("Ran Developer's latest code" in str(m["content"])
                                                         for m in messages)]
    assert fed and fed[0][2] == 2  # the fork's first requests that carry test results ...
    assert all(after[key] == before[key] for key in after)  # ... and all the others are the parent's


async def test_a_fork_of_a_session_without_the_test_feedback_text_remembers_the_summary(embedder: Any) -> None:
    """A session saved before TestRun kept its feedback: the fork's agents get each check's one-line summary and
    a note says so once; the fork's check still has the parent's tests (they come from the agents' replies)."""
    settings = _dytopo_checked("phased")
    _, events = await logged_run(embedder, settings, demo_script)
    old = [replace(e, feedback=None) if isinstance(e, ev.TestRun) else e for e in events]
    forked, fork_events = await logged_run(embedder, settings, demo_script,
                                           fork=fork_point(session_from_events(old), 2, "p"))
    assert [e for e in fork_events if isinstance(e, ev.Notice) and e.message == SUMMARY_ONLY]  # said ...
    assert len([e for e in fork_events if isinstance(e, ev.Notice) and "one-line summary" in e.message]) == 1  # once
    developer = by_agent(forked)["Developer"][0]
    assert developer.round == 3 and "Test results: WRONG_ANSWER" in str(developer.messages[-1]["content"])
    assert _checks(fork_events, 2)[:1] == _checks(events, 2)[:1]
