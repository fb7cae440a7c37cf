"""Issue 46 for the methods that call one agent more than once: each caller's requests form one growing
conversation (each request is the previous one, its kept reply and the new turn, byte for byte), a re-ask
stays out of it, and ``prompt_order=paper`` keeps the reference layout (one system and one user message)."""

from __future__ import annotations

from typing import Any

from core.demo.copycat import copycat_script
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.methods.dmoa.events import CALL_STEP
from core.methods.dmoa.selector import SELECTOR
from core.methods.dmoa.summary import SUMMARIZER
from core.methods.topoweaver.demo import topoweaver_script
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.scripted import RequestInfo
from tests.support.dmoa import dmoa_settings, same_two
from tests.support.request_log import breaks, by_agent, kept_replies, logged_run


async def test_dmoa_every_caller_keeps_one_growing_conversation(embedder: Any) -> None:
    requests, events = await logged_run(embedder, dmoa_settings(), same_two)
    calls, kept = by_agent(requests), kept_replies(events)
    assert len(calls[SUMMARIZER]) >= 2 and len(calls[SELECTOR]) >= 2  # one of each per step
    again = [agent for agent, mine in calls.items() if agent not in (SUMMARIZER, SELECTOR) and len(mine) >= 2]
    assert set(again) == {"Developer", "Tester"}
    for agent, mine in calls.items():
        assert breaks(mine, kept) == [], agent
    # The problem is said once per conversation, however many steps it spans.
    problem = DEMO_PROBLEMS["code"].strip()
    for agent in (SUMMARIZER, SELECTOR, *again):
        last = calls[agent][-1]
        assert sum(str(m["content"]).count(problem) for m in last.messages) == 1, agent


async def test_dmoa_a_reask_stays_out_of_the_conversation(embedder: Any) -> None:
    def echoes_once(info: RequestInfo) -> str:  # the Summarizer repeats its ask at step 1, then answers
        if info.role == SUMMARIZER and info.round == 1 and not info.is_repair:
            return copycat_script(info)
        return same_two(info)

    requests, events = await logged_run(embedder, dmoa_settings(), echoes_once)
    assert [r for r in requests if r.is_repair and r.role == SUMMARIZER]
    mine = by_agent(requests)[SUMMARIZER]
    assert breaks(mine, kept_replies(events)) == []
    assert all("could not be used" not in str(m["content"]) for m in mine[-1].messages)


async def test_dmoa_paper_order_rebuilds_every_request(embedder: Any) -> None:
    requests, _ = await logged_run(embedder, dmoa_settings(prompt_order="paper"), demo_script)
    assert all([m["role"] for m in r.messages] == ["system", "user"] for r in requests if not r.is_repair)
    assert any(r.call == CALL_STEP for r in requests)


def _topodim(**options: Any) -> Settings:
    return Settings(domain="code", strategy="topodim", strategy_options={"topodim": {"generator": "prior", **options}})


async def test_topodim_an_agent_called_again_continues_its_conversation(embedder: Any) -> None:
    requests, events = await logged_run(embedder, _topodim(), demo_script)
    calls, kept = by_agent(requests), kept_replies(events)
    again = {agent: mine for agent, mine in calls.items() if agent != "Manager" and len(mine) >= 2}
    assert again, "no agent was called twice (the demo graph has feedback and debate edges)"
    problem = DEMO_PROBLEMS["code"].strip()
    for agent, mine in again.items():
        assert breaks(mine, kept) == [], agent
        assert sum(str(m["content"]).count(problem) for m in mine[-1].messages) == 1, agent
    # The decision-maker's two calls have their own system prompts: each is one request.
    assert all(len(r.messages) == 2 for r in calls["Manager"])
    paper, _ = await logged_run(embedder, _topodim(prompt_order="paper"), demo_script)
    assert all([m["role"] for m in r.messages] == ["system", "user"] for r in paper if not r.is_repair)


async def test_topoweaver_the_orchestrator_and_a_reused_agent_continue_their_conversations(embedder: Any) -> None:
    """The scripted plans reuse coder_1 in turn 2 after a failed test: the Orchestrator's turn 2 and coder_1's
    turn 2 continue their turn-1 requests; coder_1's draft (eq. 15's Mem) is its own assistant turn."""
    settings = Settings(domain="code", strategy="topoweaver", max_retries=0)
    requests, events = await logged_run(embedder, settings, topoweaver_script)
    calls, kept = by_agent(requests), kept_replies(events)
    assert len(calls["Orchestrator"]) == 2 and len(calls["coder_1"]) == 2
    for agent in ("Orchestrator", "coder_1"):
        assert breaks(calls[agent], kept) == [], agent
        problem = DEMO_PROBLEMS["code"].strip()
        assert sum(str(m["content"]).count(problem) for m in calls[agent][-1].messages) == 1, agent
    later = str(calls["coder_1"][-1].messages[-1]["content"])
    assert "THE LAST TURN" in later and "YOUR OWN EARLIER OUTPUT" not in later  # its draft is already there
    history = str(calls["Orchestrator"][-1].messages[-1]["content"])
    assert "TURN 1:" in history and "WRONG_ANSWER" in history


async def test_dmoa_an_overgrown_conversation_drops_its_oldest_turns_once_and_says_the_problem_again(
    embedder: Any,
) -> None:
    settings = Settings(domain="code", strategy="dmoa", context_budget_tokens=900,
                        strategy_options={"dmoa": {"router": "llm", "l_max": 4}})
    requests, events = await logged_run(embedder, settings, same_two)
    trims = [e for e in events if isinstance(e, ev.MemoryTrimmed) and e.agent == SUMMARIZER]
    assert trims and any("outgrew the context" in e.message for e in events if isinstance(e, ev.Notice))
    mine = by_agent(requests)[SUMMARIZER]
    broken = breaks(mine, kept_replies(events))
    assert 1 <= len(broken) <= len(trims)  # the prefix breaks once per trim, and grows again after it
    problem = DEMO_PROBLEMS["code"].strip()
    assert all(any(problem in str(m["content"]) for m in r.messages) for r in mine)  # never without the problem
