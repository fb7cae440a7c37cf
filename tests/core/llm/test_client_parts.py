"""The jobs LLMClient is put together from, each on its own (core.llm.retry, formats, slots, request): how
long a failed call waits before it is tried again and when it gives up, the response_format fallbacks, the
llama.cpp slot each agent keeps, and what a request body carries. The client end to end, against the
scripted server, is tested in tests/core/runtime."""

from __future__ import annotations

import email.utils
import time

import openai
import pytest

from core.llm.call_id import CallId
from core.llm.errors import EndpointUnavailable
from core.llm.formats import FormatSupport
from core.llm.httpx_lib import httpx
from core.llm.request import chat_request, name_call
from core.llm.request_seed import REQUEST_SEED
from core.llm.retry import RetryCount, RetryPolicy, retry_after
from core.llm.slots import SlotTable

URL = "http://127.0.0.1:9/v1"


def _status(kind: type[openai.APIStatusError], code: int, headers: dict[str, str] | None = None
            ) -> openai.APIStatusError:
    """The error the SDK raises for a response with this status and these headers."""
    response = httpx.Response(code, headers=headers or {}, request=httpx.Request("POST", URL))
    return kind(f"status {code}", response=response, body=None)


def _policy(max_retries: int = 2, max_retry_wait: float = 60.0) -> RetryPolicy:
    return RetryPolicy(max_retries, max_retry_wait, URL, URL)


def test_retry_after_is_read_in_milliseconds_seconds_or_as_a_date() -> None:
    assert retry_after(_status(openai.RateLimitError, 429, {"retry-after-ms": "1500"})) == 1.5
    assert retry_after(_status(openai.RateLimitError, 429, {"retry-after": "3"})) == 3.0
    date = email.utils.formatdate(time.time() + 3600, usegmt=True)
    named = retry_after(_status(openai.RateLimitError, 429, {"retry-after": date}))
    assert named is not None and 3000 < named <= 3600
    assert retry_after(_status(openai.RateLimitError, 429, {"retry-after": "soon"})) is None
    assert retry_after(_status(openai.RateLimitError, 429)) is None


def test_a_429_naming_its_wait_is_waited_past_max_retries_until_max_retry_wait_is_spent() -> None:
    error = _status(openai.RateLimitError, 429, {"retry-after": "2"})
    policy, count = _policy(max_retries=1, max_retry_wait=5.0), RetryCount(retries=3, waited=2.0)
    assert policy.wait(error, count) == (2.0, False)  # the fourth retry, though max_retries is 1
    count.waited = 4.0
    with pytest.raises(EndpointUnavailable, match="still refused after 4 s of waiting, more than max_retry_wait"):
        policy.wait(error, count)


def test_a_429_asking_for_more_than_max_retry_wait_ends_the_call_in_one_line() -> None:
    error = _status(openai.RateLimitError, 429, {"retry-after": "120"})
    with pytest.raises(EndpointUnavailable) as raised:
        _policy().wait(error, RetryCount())
    assert raised.value.message == (f"rate limited by {URL}: it asks to wait 120 s, more than max_retry_wait allows "
                                    "(60 s a call): try again later or raise max_retry_wait")


def test_a_429_naming_no_wait_backs_off_and_its_last_wait_fills_what_is_left() -> None:
    error = _status(openai.RateLimitError, 429)
    first, backoff = _policy().wait(error, RetryCount())
    assert backoff and 0.375 <= first <= 0.5  # 0.5 s less up to a quarter of jitter
    later, _ = _policy().wait(error, RetryCount(retries=10))
    assert 6.0 <= later <= 8.0  # the backoff stops doubling at 8 s
    last, _ = _policy(max_retry_wait=10.0).wait(error, RetryCount(retries=10, waited=9.0))
    assert last == pytest.approx(1.0)
    assert "rate limited by" in _policy().message(error, last, True, 10.0, "ignored")


def test_a_server_error_is_retried_max_retries_times_and_a_bad_request_never() -> None:
    error = _status(openai.InternalServerError, 503)
    delay, backoff = _policy().wait(error, RetryCount(retries=1))
    assert not backoff and 0.75 <= delay <= 1.0
    with pytest.raises(openai.InternalServerError):
        _policy().wait(error, RetryCount(retries=2))
    with pytest.raises(openai.BadRequestError):
        _policy().wait(_status(openai.BadRequestError, 400), RetryCount())
    told_not_to = _status(openai.InternalServerError, 500, {"x-should-retry": "false"})
    with pytest.raises(openai.InternalServerError):
        _policy().wait(told_not_to, RetryCount())


def test_response_format_falls_back_from_json_schema_to_json_object_to_none() -> None:
    formats, heard = FormatSupport(), []
    schema = {"name": "reply", "schema": {"type": "object"}, "strict": True}
    request = {"response_format": formats.choose(True, schema)}
    assert request["response_format"] == {"type": "json_schema", "json_schema": schema}
    assert formats.rejected(request, _status(openai.BadRequestError, 400), heard.append)
    request = {"response_format": formats.choose(True, schema)}
    assert request["response_format"] == {"type": "json_object"}
    assert formats.rejected(request, _status(openai.UnprocessableEntityError, 422), heard.append)
    assert formats.choose(True, schema) is None and formats.choose(False, schema) is None
    assert (formats.schema_supported, formats.json_mode_supported) == (False, False)
    assert heard == ["endpoint rejected JSON-schema output (400); asking for JSON mode instead",
                     "endpoint rejected JSON mode (422); continuing without it"]


def test_a_format_seen_accepted_is_not_dropped_on_a_later_bad_request() -> None:
    formats = FormatSupport()
    request = {"response_format": formats.choose(True, None)}
    formats.accepted(request)
    assert formats.json_mode_supported is True
    assert not formats.rejected(request, _status(openai.BadRequestError, 400), None)
    assert formats.choose(True, None) == {"type": "json_object"}


def test_each_agent_of_a_lone_run_keeps_a_slot_while_they_fit() -> None:
    default = SlotTable(total=3)  # the server places every call unless the settings ask for per-agent slots
    assert default.plan(["Manager"]) and default.slot_for("Manager") is None
    table = SlotTable(total=3, per_agent=True)
    run = table.plan(["Manager", "Developer", "Manager"])
    assert table.assigned == {"Manager": 0, "Developer": 1}
    assert table.slot_for("Tester") == 2 and table.slot_for("Reviewer") is None  # no free slot left
    other = table.plan(["Manager"])  # a second run at once: its agents share names, so no slot is named
    assert table.slot_for("Manager") is None
    table.release(other)
    assert table.assigned == {"Manager": 0, "Developer": 1}
    table.release(run)
    assert table.assigned == {} and table.slot_for("Manager") is None
    assert SlotTable(total=None).plan(["Manager"]) and SlotTable().slot_for("Manager") is None


def test_a_request_carries_the_sampling_extras_seed_format_and_the_agents_slot() -> None:
    token = REQUEST_SEED.set(7)
    try:
        request = chat_request("m", [{"role": "user", "content": "hi"}], temperature=0.2, max_tokens=64,
                               extras={"top_p": 0.9, "top_k": 40, "min_p": 0.05},
                               response_format={"type": "json_object"}, top_logprobs=3)
    finally:
        REQUEST_SEED.reset(token)
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    assert (request["seed"], request["top_p"], request["top_logprobs"], request["logprobs"]) == (7, 0.9, 3, True)
    assert request["extra_body"] == {"top_k": 40, "min_p": 0.05}  # not OpenAI parameters: in the body's extras
    name_call(request, CallId("Developer", "work", 2), 1)
    assert request["extra_headers"] == {"X-Swarm-Call": "role=Developer; call=work; round=2"}
    assert request["extra_body"] == {"top_k": 40, "min_p": 0.05, "id_slot": 1}
    plain = chat_request("m", [], temperature=0.0, max_tokens=8, extras={}, response_format=None)
    assert not {"seed", "top_p", "extra_body", "response_format", "logprobs"} & set(plain)
