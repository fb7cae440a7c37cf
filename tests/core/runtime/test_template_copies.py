"""Issue 44: a model that copies the reply template is detected, asked once more, counted honestly, and its
template text is never passed on as work (not routed, not embedded, not an answer)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.copycat import copycat_script
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.copies import copied_fields, is_slot
from core.runtime.parsing import (
    ParseError,
    TemplateCopied,
    contract_warning,
    parse_descriptors,
    parse_manager,
    parse_work,
    parse_worker,
)
from core.runtime.prompts import manager_system_prompt, reply_shape
from core.runtime.rosters import builtin_team
from core.runtime.scripted import RequestInfo


async def _run(script: Any, embedder: Any, **chosen: Any) -> tuple[ev.RunFinished, list[ev.Event], list[RequestInfo]]:
    settings = Settings(**{"max_rounds": 2, **chosen})
    events: list[ev.Event] = []
    with ScriptedServer(script) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        try:
            engine = build_engine(DEMO_PROBLEMS[settings.domain], settings, backend, [events.append],
                                  embedder=embedder)
            finished = await asyncio.wait_for(engine.run(), timeout=120)  # a guard against hangs
        finally:
            await backend.close()
        return finished, events, list(server.requests)


def _shape(text: str) -> str:
    return text[text.index("{"): text.rindex("}") + 1]


@pytest.mark.parametrize(("call", "parser"), [(ev.CallKind.WORK, parse_work), (ev.CallKind.SINGLE_PASS, parse_worker),
                                              (ev.CallKind.DESCRIPTORS, parse_descriptors)])
@pytest.mark.parametrize("private_only", [False, True])
def test_every_worker_shape_copied_verbatim_is_refused(call: str, parser: Any, private_only: bool) -> None:
    team = builtin_team("math")  # the answer role's shape has the answer slot too
    role = team.role(team.answer_role)
    with pytest.raises(TemplateCopied):
        parser(_shape(reply_shape(team, role, call, private_only=private_only)))


def test_the_managers_shape_copied_is_refused_and_the_former_wording_too() -> None:
    with pytest.raises(TemplateCopied):
        parse_manager(_shape(manager_system_prompt(builtin_team("code"))))
    # SmolLM2's copies of the former shape (issue 44), whitespace and case aside.
    with pytest.raises(TemplateCopied):
        parse_work('{"public": "Your work this round,  for the Manager and the teammates routed to you", '
                   '"private": {"<Teammate>": "optional note for that teammate only"}}')
    with pytest.raises(TemplateCopied):
        parse_descriptors('{"query": "what you need next from teammates (one sentence)", '
                          '"key": "what you can provide to teammates (one sentence)"}')
    with pytest.raises(TemplateCopied):
        parse_manager('{"goal": "the concrete goal for round 1 (empty when terminating)", "terminate": false}')


def test_own_content_passes_and_a_copied_note_is_dropped_not_routed() -> None:
    reply = json.dumps({"public": "def f(x): return x + 1", "private": {
        "<a teammate's name>": "<optional note for that teammate only>", "Tester": "check f(0) == 1"}})
    parsed = parse_work(reply)
    assert parsed.public.startswith("def f") and parsed.private == {"Tester": "check f(0) == 1"}
    # Content that mentions a slot's words among its own is the agent's own.
    assert not is_slot("I need what you need next from teammates to be the failing test for f(0), then f(9)")
    assert copied_fields({"query": "<what you need next from teammates, in one sentence>", "key": "tests"}) == [
        "query"]
    with pytest.raises(ParseError):  # a copy is a ParseError: the re-ask path treats it as any unusable reply
        parse_descriptors('{"query": "<what you need next from teammates, in one sentence>", "key": "x"}')


def test_the_summary_says_how_many_copied_the_reply_template() -> None:
    assert contract_warning(0, 15, 15) == (
        "0 of 15 replies parsed; 15 copied the reply template: the model copied the reply template instead of "
        "answering")
    assert contract_warning(12, 15, 3) == "12 of 15 replies parsed; 3 copied the reply template"
    assert contract_warning(15, 15, 0) is None


@pytest.mark.parametrize("protocol", ["phased", "single-pass"])
async def test_a_copycat_model_is_counted_honestly_routes_nothing_and_ends_without_an_answer(
    embedder: Any, protocol: str
) -> None:
    finished, events, requests = await _run(copycat_script, embedder, protocol=protocol)
    assert finished.replies_total > 0
    assert finished.replies_parsed == 0 and finished.replies_copied == finished.replies_total
    assert finished.answer_source in ("", "none") and not finished.final_answer.strip()
    assert finished.reason != "converged"
    # Each copy was asked for once more, with one plain line saying what was wrong.
    reasks = [r for r in requests if r.is_repair]
    assert reasks and all("placeholder text" in str(r.messages[-1]["content"]) for r in reasks)
    # Nothing routed, no template text shown as work, no edges built on copied descriptors.
    assert all(not m.deliveries for m in events if isinstance(m, ev.MessagesRouted))
    finished_calls = [e for e in events if isinstance(e, ev.AgentFinished)]
    assert finished_calls and all(not e.public for e in finished_calls if e.agent != "Manager")
    assert all(e.status == ev.CallStatus.UNPARSED and "placeholder text" in e.error for e in finished_calls)
    graphs = [e for e in events if isinstance(e, ev.TopologyBuilt)]
    assert all(not g.routing.get("edges") for g in graphs)
    notices = [e.message for e in events if isinstance(e, ev.Notice)]
    assert any("copied the reply template again" in n for n in notices)
    assert any("no agent wrote its own content" in n for n in notices)
    # The record keeps the count (sessions, exports read RunFinished).
    again = ev.event_from_dict(finished.to_dict())
    assert isinstance(again, ev.RunFinished) and again.replies_copied == finished.replies_copied


async def test_a_model_that_copies_once_and_then_answers_is_parsed(embedder: Any) -> None:
    seen: set[tuple[str, str, int]] = set()

    def once(info: RequestInfo) -> str:
        key = (info.role, info.call, info.round)
        if key in seen or info.is_repair:
            return demo_script(info)
        seen.add(key)
        return copycat_script(info)

    finished, _, requests = await _run(once, embedder, max_rounds=3)
    assert finished.replies_copied == 0 and finished.replies_parsed == finished.replies_total
    assert any(r.is_repair for r in requests)
    assert finished.final_answer.strip()
