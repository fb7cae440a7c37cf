"""A request over the model's context: each server's refusal is recognised, the prompt is trimmed by the
method's own memory rule and sent once more, the user is told, and the run goes on; where the server
reports its context (llama.cpp's /props) prompts are planned within it from the start."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from core.demo.behaviour import OVERFLOW_STYLES, ServerBehaviour
from core.demo.scripts import demo_script
from core.demo.server import FaultRule, ScriptedServer
from core.llm.client import LLMClient
from core.llm.overflow import context_overflow
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.context import equal_shares, fit_pieces, shrink_pieces
from core.runtime.scripted import RequestInfo, estimate_tokens, text_of
from tests.support.engine import of, run_swarm

CONTEXT = 800  # the demo's round-1 prompts fit (about 350 tokens); later rounds' memory does not


def prompt_tokens(info: RequestInfo) -> int:
    return estimate_tokens("".join(text_of(m.get("content")) for m in info.messages))


def notices(events: list[ev.Event]) -> list[str]:
    return [e.message for e in of(events, ev.Notice)]


@pytest.mark.parametrize("style", OVERFLOW_STYLES)
async def test_each_servers_refusal_is_recognised(style: str) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(context_size=100, overflow_style=style)) as server:
        client = LLMClient(server.base_url, "demo", server.model)
        try:
            with pytest.raises(openai.BadRequestError) as caught:
                await client.chat([{"role": "user", "content": "x" * 2000}], temperature=0.1, max_tokens=50)
        finally:
            await client.close()
    overflow = context_overflow(caught.value)
    assert overflow is not None
    if style in ("llama.cpp", "vllm", "openai"):  # these name the sizes; Ollama does not
        assert overflow.n_ctx == 100 and overflow.prompt_tokens == 500
        assert client.context_size == 100  # learnt for planning the next prompts
    else:
        assert overflow.n_ctx is None and client.context_size is None


@pytest.mark.parametrize("fault", ["http_500", "http_404", "http_403"])
async def test_other_errors_are_not_overflows(fault: str) -> None:
    with ScriptedServer(demo_script) as server:
        server.add_fault(FaultRule(fault, times=0))
        client = LLMClient(server.base_url, "demo", server.model, max_retries=0)
        try:
            with pytest.raises(openai.APIStatusError) as caught:
                await client.chat([{"role": "user", "content": "hi"}], temperature=0.1, max_tokens=50)
        finally:
            await client.close()
    assert context_overflow(caught.value) is None and client.context_size is None


@pytest.mark.parametrize("style", OVERFLOW_STYLES)
async def test_a_run_survives_an_overflow_with_a_smaller_retry(embedder: Any, style: str) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(context_size=CONTEXT, overflow_style=style)) as server:
        finished, events, _ = await run_swarm(server, embedder, settings=Settings(max_retry_wait=1.0))
        requests, refused = list(server.requests), list(server.overflowed)
    assert finished.reason == "manager", finished.detail  # the demo's own ending, not "error"
    assert refused, "no request went over the context"
    said = [n for n in notices(events) if "exceeds the model's context" in n and "asking once more" in n]
    assert said, notices(events)
    first = refused[0]
    after = requests[requests.index(first) + 1:]
    retry = next(r for r in after if (r.role, r.call, r.round) == (first.role, first.call, first.round))
    assert retry not in refused
    if style == "vllm":  # the prompt fit; the prompt and max_tokens together did not: max_tokens shrinks
        assert retry.body["max_tokens"] < first.body["max_tokens"]
        assert prompt_tokens(retry) + retry.body["max_tokens"] <= CONTEXT
    else:
        assert prompt_tokens(retry) < prompt_tokens(first) and prompt_tokens(retry) <= CONTEXT
    # The method's memory rule did the trimming: DyTopo drops the oldest memory items, for the record.
    if style != "vllm":
        assert of(events, ev.MemoryTrimmed)


async def test_a_reported_context_plans_prompts_within_it_from_the_start(embedder: Any) -> None:
    with ScriptedServer(demo_script, ServerBehaviour(context_size=CONTEXT, report_context=True)) as server:
        finished, events, _ = await run_swarm(server, embedder)
        requests, refused = list(server.requests), list(server.overflowed)
    assert finished.reason == "manager", finished.detail
    assert not refused  # every prompt fit: none had to be refused and sent again
    assert all(prompt_tokens(r) + min(r.body["max_tokens"], CONTEXT // 4) <= CONTEXT for r in requests)
    assert any("prompt trimmed to fit the model's context of 800 tokens" in n for n in notices(events))


@pytest.mark.parametrize("strategy", ["dmoa", "topodim", "topoweaver", "single-turn"])
async def test_every_method_survives_a_small_context(embedder: Any, strategy: str) -> None:
    settings = Settings(strategy=strategy, domain="math", max_retry_wait=1.0)
    with ScriptedServer(demo_script, ServerBehaviour(context_size=400, overflow_style="ollama")) as server:
        finished, _, _ = await run_swarm(server, embedder, settings=settings)
    assert finished.reason != "error", finished.detail


async def test_a_prompt_that_cannot_fit_fails_its_call_not_the_run(embedder: Any) -> None:
    settings = Settings(strategy="single", domain="math")
    with ScriptedServer(demo_script, ServerBehaviour(context_size=20, overflow_style="llama.cpp")) as server:
        finished, events, _ = await run_swarm(server, embedder, settings=settings)
    assert finished.reason != "error" and finished.answer_source == "none"
    (call,) = of(events, ev.AgentFinished)
    assert call.status == "failed" and "exceeds the model's context" in call.error


def test_fitting_drops_the_oldest_first_then_cuts_to_equal_shares() -> None:
    assert fit_pieces(["old" * 10, "new" * 10], ["read" * 5], 60) == (1, ["read" * 5])
    drop, cut = fit_pieces(["old" * 10], ["a" * 1000, "b" * 50], 500)
    assert drop == 1 and cut[1] == "b" * 50 and len(cut[0]) <= 450 and "characters cut" in cut[0]
    assert equal_shares(["x" * 10], 100) == ["x" * 10]

    def build(kept: list[str], shared: list[str]) -> list[dict[str, str]]:
        return [{"role": "system", "content": "rules"},
                {"role": "user", "content": "PROBLEM\n" + "\n".join(kept) + "\n" + "\n".join(shared)}]

    shrink = shrink_pieces(build, ["m1" * 100, "m2" * 100], ["inbox" * 20])
    smaller = shrink(400)
    assert smaller is not None and "m1" not in smaller[1]["content"] and "m2" in smaller[1]["content"]
    assert shrink(10_000) is None  # nothing to trim when it fits


def test_topodim_clips_every_quoted_answer_to_one_smaller_limit() -> None:
    from core.methods.topodim.prompts import clip, clip_shrink

    answers = ["a" * 5000, "b" * 3000]

    def make(limit: int) -> list[dict[str, str]]:
        return [{"role": "user", "content": "PROBLEM\n" + "\n".join(clip(a, limit) for a in answers)}]

    smaller = clip_shrink(make)(4000)
    assert smaller is not None and len(smaller[0]["content"]) <= 4000
    assert smaller[0]["content"].count("cut:") == 2  # both answers clipped alike, each marked
    assert clip_shrink(lambda limit: [{"role": "user", "content": "short"}])(10) is None  # nothing to clip
