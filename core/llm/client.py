"""The LLM layer: the real ``openai.AsyncOpenAI`` client, streaming, against any OpenAI-compatible URL.

Every wait is bounded, and every wait can be cancelled (all of them are awaits):

* the response must start (headers) within ``first_byte_timeout`` (default 30 s), connect included; if it
  does not, the call ends with "no answer from URL in N s" and is not retried (core.llm.first_byte);
* inside a stream, ``timeout`` (``call_timeout``, 120 s) is the longest silence; a stream that stalls or
  drops mid-way is retried once; a stream that goes on past max_tokens, or slower than
  ``min_tokens_per_second``, is cut off as if at max_tokens (core.llm.reading, core.llm.bounds);
* a call that fails before it starts (408/409/5xx, a refused connection) is retried here, not by the
  SDK, up to ``max_retries`` times, honouring Retry-After, and each retry is announced (``on_retry``:
  "rate limited by URL, retrying in N s"); a 429 is retried as often as fits in ``max_retry_wait``
  (core.llm.retry).

Structured output: a call that names a contract's JSON schema asks for ``response_format`` of type
``json_schema``; a server that rejects it is asked for ``json_object``, then for nothing, and each
client remembers what its endpoint accepted (core.llm.formats). On llama.cpp each agent keeps a request slot
of its own (core.llm.slots).

This module puts those parts together, one client per endpoint; each part is a module of its own.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any

import openai

from core.llm.bounds import ReplyBound
from core.llm.call_id import CallId
from core.llm.errors import EndpointError, EndpointUnavailable, describe_api_error, endpoint_down, redact_secret
from core.llm.first_byte import FirstByte
from core.llm.formats import FormatSupport
from core.llm.overflow import context_overflow
from core.llm.props import read_props
from core.llm.reading import DeltaCallback, StreamBroken, read_reply
from core.llm.request import chat_request, name_call
from core.llm.result import ChatResult, chat_result, cut_off_cost
from core.llm.retry import RetryCount, RetryPolicy
from core.llm.slots import SlotTable
from core.llm.stream import StreamState
from core.llm.tokens import CutOffCost
from core.llm.urls import URLError, check_base_url, redact_url, strip_userinfo

# Importers take these from here (the engine, the faces): the client's errors and its result.
__all__ = ["ChatResult", "EndpointError", "EndpointUnavailable", "LLMClient", "endpoint_down"]

StatusCallback = Callable[[str], None]


def _prompt_chars(messages: list[dict[str, str]]) -> int:
    return sum(len(m.get("content") or "") for m in messages)


class LLMClient:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str | None = None,
        *,
        timeout: float = 120.0,
        first_byte_timeout: float = 30.0,
        max_retries: int = 2,
        max_retry_wait: float = 60.0,
        min_tokens_per_second: float = 2.0,
        max_concurrency: int = 4,
        sampling_extras: dict[str, Any] | None = None,
    ) -> None:
        """Raises EndpointError (one line) for a URL that cannot be used (see urls.check_base_url).
        ``user:password@`` in the URL is dropped: the API key is the only credential sent."""
        try:
            check_base_url(base_url, allow_userinfo=True)
        except URLError as exc:
            raise EndpointError(str(exc)) from None
        self.base_url = base_url
        self.model = model or ""
        self._timeout = timeout
        self.first_byte_timeout = first_byte_timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.min_tokens_per_second = min_tokens_per_second
        # Hears "contacting URL … N s" while list_models / ensure_model wait: set by the face that waits
        # (core.compose.runner.open_backend, from its BackendChoice), not threaded through every layer.
        self.on_status: StatusCallback | None = None
        self._client = openai.AsyncOpenAI(
            base_url=strip_userinfo(base_url),
            api_key=api_key,
            max_retries=0,  # retries are ours: bounded in time, announced, and cancellable
            # read= is the longest silence tolerated inside a stream: a stalled stream times out.
            timeout=openai.Timeout(timeout, connect=min(10.0, timeout, first_byte_timeout)),
        )
        self._limit = asyncio.Semaphore(max_concurrency)
        self._extras = {k: v for k, v in (sampling_extras or {}).items() if v is not None}
        self.formats = FormatSupport()  # what the endpoint accepts as response_format, learned on the first calls
        self.calls = 0
        # The model's context in tokens, when the server says it (llama.cpp's /props, or an overflow error
        # that names it), and how many prompt characters make a token, learned from the usage it reports:
        # prompts are planned within the context from these (core.runtime.engine).
        self.context_size: int | None = None
        self.chars_per_token = 4.0
        # llama.cpp's request slots, and the slot each agent keeps (plan_slots).
        self.slot_table = SlotTable()

    @property
    def schema_supported(self) -> bool | None:
        """Whether the endpoint accepts a json_schema response_format (None: not known yet)."""
        return self.formats.schema_supported

    @property
    def json_mode_supported(self) -> bool | None:
        """Whether the endpoint accepts a json_object response_format (None: not known yet)."""
        return self.formats.json_mode_supported

    @property
    def total_slots(self) -> int | None:
        """llama.cpp's request slots (/props total_slots); None: the server does not say."""
        return self.slot_table.total

    @total_slots.setter
    def total_slots(self, value: int | None) -> None:
        self.slot_table.total = value

    @property
    def slots(self) -> dict[str, int]:
        """The slot each agent keeps, so that its KV cache holds that agent's previous prompt; empty: the
        server picks a slot by prompt similarity."""
        return self.slot_table.assigned

    def plan_slots(self, agents: list[str]) -> int:
        """A run starts with these agents (SlotTable.plan); returns the run's token for release_slots."""
        return self.slot_table.plan(agents)

    def release_slots(self, run: int) -> None:
        """The run has ended: its agents' slots are free for the next run."""
        self.slot_table.release(run)

    def estimate_prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """The prompt's tokens as this endpoint counts them, from its characters (a few per message for the
        chat template)."""
        return math.ceil(_prompt_chars(messages) / self.chars_per_token) + 4 * len(messages)

    def _learn_chars_per_token(self, messages: list[dict[str, str]], prompt_tokens: int) -> None:
        chars = _prompt_chars(messages)
        if prompt_tokens > 8 * len(messages) and chars > 0:
            self.chars_per_token = max(1.0, min(8.0, chars / prompt_tokens))

    def _learn_overflow(self, messages: list[dict[str, str]], exc: BaseException) -> bool:
        """Whether ``exc`` says the request exceeds the context; what it tells of the context size and of
        the prompt's tokens is kept for planning the next prompts."""
        overflow = context_overflow(exc)
        if overflow is None:
            return False
        if overflow.n_ctx:
            self.context_size = overflow.n_ctx
        if overflow.prompt_tokens:
            self._learn_chars_per_token(messages, overflow.prompt_tokens)
        return True

    async def probe_context_size(self, wait: float = 5.0) -> int | None:
        """The context size of one request slot, where the server reports it (llama.cpp's GET /props,
        ``default_generation_settings.n_ctx``); None when it does not say (any error, any other server).
        The number of slots it reports is kept too (plan_slots)."""
        props = await read_props(self._client, self.base_url, min(wait, self.first_byte_timeout))
        if props.total_slots is not None:
            self.total_slots = props.total_slots
        if props.n_ctx is not None:
            self.context_size = props.n_ctx
        return props.n_ctx

    @property
    def shown_url(self) -> str:
        return redact_url(self.base_url)

    async def close(self) -> None:
        await self._client.close()

    def describe_error(self, exc: BaseException) -> str:
        """describe_api_error, with the API key cut out (a server's error text may echo the key it got,
        as some proxies do) and the URL without user:password@ or a ?api-key= query: these messages
        reach notices, sessions and JSON lines."""
        return redact_secret(describe_api_error(exc, self.shown_url), self._client.api_key)

    def _first_byte(self) -> FirstByte:
        return FirstByte(self.first_byte_timeout, self.shown_url, strip_userinfo(self.base_url))

    def _retry_policy(self) -> RetryPolicy:
        return RetryPolicy(self.max_retries, self.max_retry_wait, self.shown_url, strip_userinfo(self.base_url))

    async def list_models(self) -> list[str]:
        try:
            page = await self._first_byte().answer(self._client.models.list(), self.on_status)
        except openai.OpenAIError as exc:
            raise EndpointError(self.describe_error(exc)) from None
        return [m.id for m in page.data]

    async def ensure_model(self) -> str:
        """Use the configured model, else the first one the endpoint lists."""
        if self.model:
            return self.model
        models = await self.list_models()
        if not models:
            raise EndpointError(f"the endpoint {self.shown_url} lists no models: pass --model NAME")
        self.model = models[0]
        return self.model

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float,
        max_tokens: int,
        json_mode: bool = True,
        schema: dict[str, Any] | None = None,
        on_delta: DeltaCallback | None = None,
        on_retry: Callable[[str], None] | None = None,
        top_logprobs: int = 0,
        call_id: CallId | None = None,
        cut_off: CutOffCost | None = None,
    ) -> ChatResult:
        """One streamed completion. ``schema``: the ``json_schema`` object (name, schema, strict) of the
        contract the reply must follow, asked for when the endpoint accepts it. ``top_logprobs`` > 0 asks for
        each token's top logprobs (``ChatResult.top_logprobs``). ``call_id`` names the call in a request header
        (for the scripted server and proxies; never in the messages). Raises openai.OpenAIError subclasses when
        it finally fails (EndpointUnavailable when it gave up waiting). ``cut_off``: filled when the call is
        cancelled after its request went out, with what it had cost (the caller counts it: the server did the
        work)."""
        async with self._limit:
            self.calls += 1
            start = time.perf_counter()
            count = RetryCount()
            while True:
                count.attempts += 1
                request = chat_request(self.model, messages, temperature=temperature, max_tokens=max_tokens,
                                       extras=self._extras, response_format=self.formats.choose(json_mode, schema),
                                       top_logprobs=top_logprobs)
                if call_id is not None:
                    name_call(request, call_id, self.slot_table.slot_for(call_id.role))
                state = StreamState(logprobs=[] if top_logprobs > 0 else None)
                try:
                    await self._stream(request, on_delta, state)
                except asyncio.CancelledError:
                    if cut_off is not None:
                        cut_off_cost(cut_off, messages, state)
                    raise
                except (openai.APIError, StreamBroken) as exc:
                    await self._recover(exc, request, messages, count, on_retry)  # raises when not retried
                    continue
                self.formats.accepted(request)
                if state.usage is not None:
                    self._learn_chars_per_token(messages, state.usage[0])
                return chat_result(messages, state, time.perf_counter() - start, count.attempts)

    async def _recover(self, exc: openai.APIError | StreamBroken, request: dict[str, Any],
                       messages: list[dict[str, str]], count: RetryCount, on_retry: Callable[[str], None] | None
                       ) -> None:
        """After a failed attempt: return when the call is to be tried again (after the wait it takes), else
        raise. A broken stream is retried once; a rejected response_format is asked again weaker; an overflow
        of the context is the caller's to shrink (core.runtime.engine), never retried here."""
        if isinstance(exc, StreamBroken):
            if count.stream_retries >= 1:
                raise exc.error from None
            count.stream_retries += 1
            if on_retry:
                on_retry(f"{self.describe_error(exc.error)}; retrying once")
            return
        if isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError):
            if self._learn_overflow(messages, exc) or not self.formats.rejected(request, exc, on_retry):
                raise exc
            return
        retried = isinstance(exc, openai.APIStatusError | openai.APIConnectionError)
        if not retried or isinstance(exc, EndpointUnavailable) or self._learn_overflow(messages, exc):
            raise exc
        policy = self._retry_policy()
        delay, backoff = policy.wait(exc, count)
        count.retries += 1
        count.waited += delay
        if on_retry:
            on_retry(policy.message(exc, delay, backoff, count.waited, self.describe_error(exc)))
        await asyncio.sleep(delay)

    async def _stream(self, request: dict[str, Any], on_delta: DeltaCallback | None, state: StreamState) -> None:
        # The SDK sends the request (auth, timeouts, status errors); the body is read as raw SSE lines
        # (core.llm.reading), skipping the SDK's per-chunk model construction. ``state`` is the caller's:
        # what streamed before a cancel stays readable there.
        opened = self._client.chat.completions.with_streaming_response.create(**request)
        state.sent = True
        response = await self._first_byte().answer(opened.__aenter__())
        bound = ReplyBound.for_call(request["max_tokens"], self.min_tokens_per_second, self._timeout)
        try:
            await read_reply(response.iter_lines(), response.http_response.request, bound, state, on_delta,
                             self.shown_url)
        finally:
            await opened.__aexit__(None, None, None)
