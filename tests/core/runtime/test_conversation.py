"""Issue 46: each agent's requests form one growing conversation, and the team's shared preamble comes first.

From the scripted server's request log: every request of an agent is its previous request, the reply the run
kept, and a new user turn, byte for byte (both protocols, the baselines, the Manager); a re-ask is a side
request that does not break it; a conversation that outgrows the context breaks it once and says so."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import DEMO_PROBLEMS
from core.demo.server import FaultRule
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.prompts import TURN_ASKS, team_preamble
from core.runtime.scripted import RequestInfo
from tests.support.engine import changing_replies
from tests.support.request_log import breaks, by_agent, kept_replies, logged_run


async def _log(embedder: Any, *, faults: tuple[FaultRule, ...] = (), context_size: int | None = None, **chosen: Any
               ) -> tuple[list[RequestInfo], list[ev.Event]]:
    settings = Settings(**{"max_rounds": 3, "convergence_threshold": 1.01, **chosen})
    return await logged_run(embedder, settings, changing_replies, faults, ServerBehaviour(context_size=context_size))


ROUND_METHODS = ("dytopo", "broadcast", "chain", "star", "random", "single-turn")  # DyTopo's rounds and prompts


@pytest.mark.parametrize("protocol", ["single-pass", "phased"])
@pytest.mark.parametrize("method", ROUND_METHODS)
async def test_every_request_of_an_agent_begins_with_its_previous_request_and_reply(
    embedder: Any, protocol: str, method: str
) -> None:
    requests, events = await _log(embedder, protocol=protocol, strategy=method)
    agents, kept = by_agent(requests), kept_replies(events)
    assert set(agents) == {"Manager", "Developer", "Researcher", "Tester", "Designer"}
    rounds = 1 if method == "single-turn" else 3
    manager = agents.pop("Manager")
    for agent, calls in agents.items():
        assert len(calls) == rounds * (1 if protocol == "single-pass" else 2) - (protocol == "phased"), agent
        assert breaks(calls, kept) == [], agent
        # Each request adds one user turn: the reply before it, then what is new.
        for before, after in itertools.pairwise(calls):
            assert len(after.messages) == len(before.messages) + 2
    # The Manager's plan is its conversation's first turn; each review is a side request after it (the paper's
    # Manager reads one round's outputs: eqs. 12-13), so no review holds an earlier one.
    plan, reviews = manager[0], manager[1:]
    assert len(reviews) == rounds
    for review in reviews:
        assert breaks([plan, review], kept) == []
        assert len(review.messages) == len(plan.messages) + 2
    # Phased DyTopo: a round's descriptor call and its work call are consecutive turns of one conversation.
    if protocol == "phased" and rounds > 1:
        developer = [(r.call, r.round) for r in agents["Developer"]]
        assert developer[1:3] == [(ev.CallKind.DESCRIPTORS, 2), (ev.CallKind.WORK, 2)]


async def test_every_agent_begins_with_the_same_team_preamble_and_the_paper_order_with_its_role(
    embedder: Any,
) -> None:
    requests, _ = await _log(embedder, protocol="phased")
    preamble = team_preamble(_code_domain(), DEMO_PROBLEMS["code"])
    firsts = {calls[0].role: str(calls[0].messages[0]["content"]) for calls in by_agent(requests).values()}
    assert len(firsts) == 5 and all(text.startswith(preamble) for text in firsts.values())
    assert DEMO_PROBLEMS["code"].strip() in preamble
    for agent, text in firsts.items():  # the role comes after what the team shares
        assert text.index(f"You are {agent}") > text.index(DEMO_PROBLEMS["code"].strip())
    # -o prompt_order=paper keeps the reference layout: "You are ..." first, one user message per request.
    paper, _ = await _log(embedder, protocol="phased", strategy_options={"dytopo": {"prompt_order": "paper"}})
    assert all(str(r.messages[0]["content"]).startswith("You are ") for r in paper)
    assert all([m["role"] for m in r.messages] == ["system", "user"] for r in paper if not r.is_repair)


def _code_domain() -> Any:
    from core.runtime.rosters import builtin_team

    return builtin_team("code")


async def test_earlier_goals_and_routed_messages_stay_where_they_were(embedder: Any) -> None:
    requests, _ = await _log(embedder, protocol="single-pass")
    last = by_agent(requests)["Tester"][-1]
    text = "\n".join(str(m["content"]) for m in last.messages)
    # Round 1's goal comes before round 2's, round 1's routed messages before round 3's goal.
    assert text.index("ROUND 1 GOAL:") < text.index("ROUND 2 GOAL:") < text.index("ROUND 3 GOAL:")
    assert text.index("round 1]") < text.index("ROUND 3 GOAL:")
    # Each message a teammate sent arrives once.
    routed = [line for line in text.splitlines() if line.startswith("[round 1, from ")]
    assert routed and len(routed) == len(set(routed))


@pytest.mark.parametrize("protocol", ["single-pass", "phased"])
async def test_each_reply_shape_is_sent_once_per_request_in_the_system_prompt(embedder: Any, protocol: str) -> None:
    """Every turn stays in every later request, so what a turn repeats is sent again each round (issue 46: what
    is sent may grow by the earlier goals only): the reply shapes live in the system prompt, and a turn's ask only
    names the call kind it wants."""
    requests, _ = await _log(embedder, protocol=protocol)
    workers = [r for r in requests if r.role != "Manager" and not r.is_repair]
    kinds = 1 if protocol == "single-pass" else 2
    for request in workers:
        system, *turns = (str(m["content"]) for m in request.messages)
        assert system.count("Use exactly this shape") == kinds, (request.role, request.call, request.round)
        assert not any("Use exactly this shape" in turn or '"public":' in turn
                       for turn, message in zip(turns, request.messages[1:], strict=True)
                       if message["role"] == "user")
        assert str(request.messages[-1]["content"]).endswith(TURN_ASKS[request.call])


async def test_a_reask_is_a_side_request_and_the_kept_answer_is_appended(embedder: Any) -> None:
    fault = FaultRule("malformed", role="Developer", call=ev.CallKind.WORK, round=2, times=1)
    requests, events = await _log(embedder, protocol="phased", faults=(fault,))
    reasks = [r for r in requests if r.is_repair and r.role == "Developer"]
    assert len(reasks) == 1
    calls = by_agent(requests)["Developer"]
    asked = next(r for r in calls if (r.call, r.round) == (ev.CallKind.WORK, 2))
    # The re-ask reads the conversation and adds the bad reply and one line; the conversation goes on without them.
    assert reasks[0].messages[: len(asked.messages)] == asked.messages
    assert breaks(calls, kept_replies(events)) == []
    later = calls[-1].messages
    assert all("could not be used" not in str(m["content"]) for m in later)


async def test_a_conversation_that_outgrows_the_context_breaks_once_and_says_so(embedder: Any) -> None:
    requests, events = await _log(embedder, protocol="single-pass", max_rounds=5, context_budget_tokens=1200)
    trims = [e for e in events if isinstance(e, ev.MemoryTrimmed)]
    assert trims, "the budget was never reached"
    kept = kept_replies(events)
    workers = {agent: calls for agent, calls in by_agent(requests).items() if agent != "Manager"}
    grew_again = 0
    for agent, calls in workers.items():
        broken = breaks(calls, kept)
        mine = [t for t in trims if t.agent == agent]
        # Once per trim, where the trim was, and the conversation grows again after it.
        assert [r.round for r in broken] == [t.round for t in mine], agent
        grew_again += sum(1 for t in mine if any(r.round > t.round for r in calls))
        for r in broken:  # the first turn kept says what went before it (unless every earlier turn went)
            assert len(r.messages) == 2 or "turns of this conversation were dropped" in str(r.messages[1]["content"])
    assert grew_again, "no conversation went on after a trim"
    notices = [e for e in events if isinstance(e, ev.Notice) and "outgrew the context" in e.message]
    assert len(notices) == len(trims)


async def test_a_conversation_the_server_refuses_as_too_long_breaks_once_and_grows_again(embedder: Any) -> None:
    """The server's own context (llama.cpp's refusal, not the app's budget): the refused request is sent again
    without the oldest exchanges, and the next requests continue from that shorter conversation."""
    requests, events = await _log(embedder, protocol="single-pass", max_rounds=5, max_retry_wait=1.0,
                                  context_size=CONTEXT_TOKENS)
    trims = [e for e in events if isinstance(e, ev.MemoryTrimmed)]
    assert trims, "no conversation outgrew the server's context"
    kept = kept_replies(events)
    grew_again = 0
    for agent, calls in by_agent(requests).items():
        if agent == "Manager":
            continue
        sent = [r for r in calls if r.round > 0]
        mine = [t.round for t in trims if t.agent == agent]
        # The refused request and its shorter retry share a round: the retry is the one break of that round.
        broken = [r.round for r in breaks(_answered(sent), kept)]
        assert broken == mine, agent
        grew_again += sum(1 for t in mine if any(r.round > t for r in sent))
    assert grew_again, "no conversation went on after a trim"
    assert any(isinstance(e, ev.Notice) and "outgrew the context" in e.message for e in events)


CONTEXT_TOKENS = 1150  # llama.cpp's context for one request: every conversation outgrows it in round 4


def _answered(calls: list[RequestInfo]) -> list[RequestInfo]:
    """The last request of each (call, round): a refused one was sent again shorter."""
    last: dict[tuple[str, int], RequestInfo] = {}
    for r in calls:
        last[(r.call, r.round)] = r
    return list(last.values())
