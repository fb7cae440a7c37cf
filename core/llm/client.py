"""The LLM layer: the real ``openai.AsyncOpenAI`` client, streaming, against any OpenAI-compatible URL.

Every wait is bounded, and every wait can be cancelled (all of them are awaits):

* the response must start (headers) within ``first_byte_timeout`` (default 30 s), connect included; if it
  does not, the call ends with "no answer from URL in N s" and is not retried (``EndpointUnavailable``);
* inside a stream, ``timeout`` (``call_timeout``, 120 s) is the longest silence; a stream that stalls or
  drops mid-way is retried once; a stream that goes on past max_tokens, or slower than
  ``min_tokens_per_second``, is cut off as if at max_tokens (core.llm.bounds);
* a call that fails before it starts (408/409/5xx, a refused connection) is retried here, not by the
  SDK, up to ``max_retries`` times, honouring Retry-After, and each retry is announced (``on_retry``:
  "rate limited by URL, retrying in N s"). A 429 is a server asking for patience, not a failure: it is
  retried as often as fits in ``max_retry_wait``, after the wait it names (Retry-After) or, when it names
  none (a busy local server), with exponential backoff and jitter. One call waits at most
  ``max_retry_wait`` seconds in all; a server that asks for more, or still rate-limits when that time is
  spent, ends the call with one line (``EndpointUnavailable``).

Structured output: a call that names a contract's JSON schema asks for ``response_format`` of type
``json_schema``; a server that rejects it is asked for ``json_object``, then for nothing, and each
client remembers what its endpoint accepted.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import openai

from core.llm.bounds import ReplyBound
from core.llm.call_id import CALL_ID_HEADER, CallId
from core.llm.overflow import context_overflow
from core.llm.request_seed import REQUEST_SEED
from core.llm.stream import DONE, StreamError, StreamState, read_chunk, reply_text, sse_data
from core.llm.tokens import CutOffCost, estimate_usage
from core.llm.urls import URLError, check_base_url, redact_url, strip_userinfo

try:  # the openai SDK moved to the httpx2 fork; older releases use httpx
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx  # type: ignore[no-redef]

DeltaCallback = Callable[[str], None]
StatusCallback = Callable[[str], None]
T = TypeVar("T")

STATUS_EVERY = 5.0  # "contacting URL … N s" after 1 s, then every 5 s, while the endpoint has not answered
_MIN_NAMED_WAIT = 0.05  # seconds: the shortest Retry-After a 429 is waited, however often it repeats
_INITIAL_BACKOFF = 0.5  # seconds before the first retry when the server names no Retry-After
_MAX_BACKOFF = 8.0


class EndpointError(RuntimeError):
    """The endpoint cannot be used; the message is one line fit to show a user."""


class EndpointUnavailable(openai.APIConnectionError):
    """A call given up on: no answer in time, or rate limited beyond what we wait. The message is one line
    naming the URL. A kind of APIConnectionError, so every caller treats the endpoint as unusable for now
    (the engine ends the run when the Manager's call gets it, rather than calling the workers)."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message=message, request=httpx.Request("POST", url))


class _StreamBroken(Exception):
    """A stream that had started stalled or dropped: retried once."""

    def __init__(self, error: openai.APIConnectionError) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass
class ChatResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    usage_estimated: bool
    latency_s: float
    attempts: int
    finish_reason: str | None = None  # "stop", "length" (cut off at max_tokens), ... as the server said
    # Per generated token, the top logprobs the endpoint returned (asked for with top_logprobs=k);
    # None when not asked for or when the endpoint sent none.
    top_logprobs: list[list[float]] | None = None
    # Why the reply was cut off by the client (a stream past max_tokens, or slower than the floor rate;
    # core.llm.bounds): finish_reason is then "length". "" when the server ended it.
    cut_short: str = ""
    # Of prompt_tokens, how many the server took from its prefix cache; None when it does not say.
    cached_tokens: int | None = None


def _cut_off_cost(cost: CutOffCost, messages: list[dict[str, str]], state: StreamState) -> None:
    """What a call cancelled mid-way had cost: the server's usage when it sent one, else an estimate from
    the prompt and the reply streamed so far (nothing when the request had not gone out)."""
    if not state.sent:
        return
    cost.sent = True
    if state.usage is not None:
        cost.prompt_tokens, cost.completion_tokens = state.usage
        return
    cost.prompt_tokens, cost.completion_tokens = estimate_usage(messages, reply_text(state))
    cost.estimated = True


def _prompt_chars(messages: list[dict[str, str]]) -> int:
    return sum(len(m.get("content") or "") for m in messages)


def seconds(value: float) -> str:
    """3 s, 0.5 s, 120 s: short, without trailing zeros."""
    return f"{value:.3g}" if value < 1000 else f"{value:.0f}"


_REFUSED = ("connection refused", "name or service not known", "nodename nor servname", "no route to host",
            "temporary failure in name resolution", "network is unreachable")


def connection_refused(exc: BaseException) -> bool:
    """Whether a connection error means nothing listens there (refused, no such host), as opposed to a
    connection that was made and then reset or dropped mid-call (the server is up)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or any(s in str(current).lower() for s in _REFUSED):
            return True
        current = current.__cause__ or current.__context__
    return False


def endpoint_down(exc: BaseException) -> bool:
    """Whether no later call can succeed either: nothing listens at the URL, the key is refused, or there is
    no such model, or it stayed silent (or asked to wait) past the bounds of first_byte_timeout and
    max_retry_wait. A reset or dropped connection, a 429 or a 5xx after the retries fails one call, not the run."""
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError | openai.NotFoundError):
        return True
    if isinstance(exc, EndpointUnavailable):  # gave up waiting: silent, or retrying past max_retry_wait
        return True
    if isinstance(exc, openai.APITimeoutError):
        return False
    return isinstance(exc, openai.APIConnectionError) and connection_refused(exc)


def describe_api_error(exc: BaseException, base_url: str) -> str:
    """One line for a user, naming the URL; never includes request headers (they hold the key)."""
    if isinstance(exc, EndpointUnavailable | StreamError):
        return exc.message
    if isinstance(exc, openai.APITimeoutError):
        return f"the model endpoint {base_url} timed out"
    if isinstance(exc, openai.APIConnectionError) and not connection_refused(exc):
        return f"the connection to {base_url} was reset or dropped during the call (the server is up)"
    if isinstance(exc, openai.APIConnectionError):
        return (
            f"cannot reach the model endpoint at {base_url}: start your server there, point elsewhere with "
            "--base-url URL (or OPENAI_BASE_URL), or try --demo"
        )
    if isinstance(exc, openai.AuthenticationError):
        return f"the endpoint {base_url} rejected the API key (status 401): check the variable named by --api-key-env"
    if isinstance(exc, openai.NotFoundError):
        return f"the endpoint {base_url} answered 404: check --base-url (it usually ends in /v1) and --model"
    if isinstance(exc, openai.APIStatusError):
        message = (str(getattr(exc, "message", "") or exc).splitlines() or [""])[0][:200]
        return f"the endpoint {base_url} answered status {exc.status_code}: {message}"
    return f"model call failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


# Placeholders sent when no key is set: not secrets, and too common to scrub from messages.
_PLACEHOLDER_KEYS = {"", "not-needed", "demo"}


def redact_secret(text: str, secret: str | None) -> str:
    if not secret or secret in _PLACEHOLDER_KEYS:
        return text
    return text.replace(secret, "***")


def _retry_after(exc: openai.APIStatusError) -> float | None:
    """Seconds the server asks us to wait (retry-after-ms, retry-after as seconds or an HTTP date)."""
    headers = exc.response.headers
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(delay):
            return max(0.0, delay)
        return math.inf
    value = headers.get("retry-after")
    if value:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())
    return None


def _retryable(exc: openai.APIStatusError) -> bool:
    should = exc.response.headers.get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    return exc.status_code in (408, 409, 429) or exc.status_code >= 500


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
        # What the endpoint accepts as response_format, learned on the first calls (None: not known yet).
        self.schema_supported: bool | None = None
        self.json_mode_supported: bool | None = None
        self.calls = 0
        # The model's context in tokens, when the server says it (llama.cpp's /props, or an overflow error
        # that names it), and how many prompt characters make a token, learned from the usage it reports:
        # prompts are planned within the context from these (core.runtime.engine).
        self.context_size: int | None = None
        self.chars_per_token = 4.0
        # llama.cpp's request slots (/props total_slots), and the slot each agent keeps, so that its KV cache
        # holds that agent's previous prompt (plan_slots); empty: the server picks a slot by prompt similarity.
        self.total_slots: int | None = None
        self.slots: dict[str, int] = {}
        self._slot_runs: dict[int, list[str]] = {}  # the runs using this client now: their agents (plan_slots)
        self._next_run = 0

    def estimate_prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """The prompt's tokens as this endpoint counts them, from its characters (a few per message for the
        chat template)."""
        return math.ceil(_prompt_chars(messages) / self.chars_per_token) + 4 * len(messages)

    def _learn_chars_per_token(self, messages: list[dict[str, str]], prompt_tokens: int) -> None:
        chars = _prompt_chars(messages)
        if prompt_tokens > 8 * len(messages) and chars > 0:
            self.chars_per_token = max(1.0, min(8.0, chars / prompt_tokens))

    async def probe_context_size(self, wait: float = 5.0) -> int | None:
        """The context size of one request slot, where the server reports it (llama.cpp's GET /props,
        ``default_generation_settings.n_ctx``); None when it does not say (any error, any other server)."""
        root = strip_userinfo(self.base_url).rstrip("/")
        root = root[: -len("/v1")] if root.endswith("/v1") else root
        try:
            response = await asyncio.wait_for(
                self._client.get(f"{root}/props", cast_to=httpx.Response), timeout=min(wait, self.first_byte_timeout)
            )
            data = response.json()
        except (openai.OpenAIError, httpx.HTTPError, TimeoutError, ValueError):
            return None
        settings = data.get("default_generation_settings") if isinstance(data, dict) else None
        slots = data.get("total_slots") if isinstance(data, dict) else None
        if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0:
            self.total_slots = slots
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
            self.context_size = n_ctx
            return n_ctx
        return None

    def plan_slots(self, agents: list[str]) -> int:
        """A run starts with these agents: keep each on a slot of its own when the server reports enough of
        them (llama.cpp), so each prompt meets its agent's previous one in that slot's cache. With fewer slots
        than agents, or several runs sharing this client at once (a comparison, a benchmark's concurrency,
        whose agents share names), no slot is named and the server picks one by prompt similarity. An agent
        named later takes a free slot if any. Returns the run's token for release_slots."""
        self._next_run += 1
        self._slot_runs[self._next_run] = list(dict.fromkeys(agents))
        self._replan_slots()
        return self._next_run

    def release_slots(self, run: int) -> None:
        """The run has ended: its agents' slots are free for the next run."""
        self._slot_runs.pop(run, None)
        self._replan_slots()

    def _replan_slots(self) -> None:
        runs = list(self._slot_runs.values())
        names = runs[0] if len(runs) == 1 else []
        fits = bool(names) and bool(self.total_slots) and len(names) <= (self.total_slots or 0)
        self.slots = {name: index for index, name in enumerate(names)} if fits else {}

    def _slot_for(self, agent: str) -> int | None:
        if not self.slots or not self.total_slots:
            return None
        if agent not in self.slots and len(self.slots) < self.total_slots:
            self.slots[agent] = len(self.slots)
        return self.slots.get(agent)

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

    def _no_answer(self, waited: float) -> EndpointUnavailable:
        return EndpointUnavailable(
            f"no answer from {self.shown_url} in {seconds(waited)} s: the server is not responding "
            "(first_byte_timeout in the config file sets how long to wait)",
            strip_userinfo(self.base_url),
        )

    async def _answer_within(self, awaitable: Awaitable[T], *, status: bool = False) -> T:
        """``awaitable`` (a request up to its response headers), or EndpointUnavailable after
        first_byte_timeout. With ``status``, on_status hears "contacting URL … N s" every few seconds."""
        task = asyncio.ensure_future(awaitable)
        start = time.monotonic()
        limit = self.first_byte_timeout
        report = status and self.on_status is not None
        next_status = 1.0  # then every STATUS_EVERY seconds
        try:
            while True:
                elapsed = time.monotonic() - start
                if elapsed >= limit:
                    raise self._no_answer(limit)
                wake = min(limit, next_status) if report else limit
                done, _ = await asyncio.wait({task}, timeout=max(0.0, wake - elapsed))
                if done:
                    try:
                        return task.result()
                    except openai.APITimeoutError:  # the SDK's own connect or read timeout came first
                        raise self._no_answer(time.monotonic() - start) from None
                elapsed = time.monotonic() - start
                if report and next_status - 0.01 <= elapsed < limit:
                    self.on_status(f"contacting {self.shown_url} … {next_status:.0f} s")  # type: ignore[misc]
                    next_status = (next_status // STATUS_EVERY + 1) * STATUS_EVERY
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task})  # let it close its connection; a new cancel still reaches us

    async def list_models(self) -> list[str]:
        try:
            page = await self._answer_within(self._client.models.list(), status=True)
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

    def _response_format(self, json_mode: bool, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if json_mode and schema is not None and self.schema_supported is not False:
            return {"type": "json_schema", "json_schema": schema}
        if json_mode and self.json_mode_supported is not False:
            return {"type": "json_object"}
        return None

    def _request(
        self,
        messages: list[dict[str, str]],
        temperature: float,
        max_tokens: int,
        json_mode: bool,
        schema: dict[str, Any] | None = None,
        top_logprobs: int = 0,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        seed = REQUEST_SEED.get()
        if seed is not None:
            body["seed"] = seed
        extra_body: dict[str, Any] = {}
        if "top_p" in self._extras:
            body["top_p"] = self._extras["top_p"]
        for name in ("top_k", "min_p"):  # not OpenAI parameters: local servers read them from the body
            if name in self._extras:
                extra_body[name] = self._extras[name]
        if extra_body:
            body["extra_body"] = extra_body
        response_format = self._response_format(json_mode, schema)
        if response_format is not None:
            body["response_format"] = response_format
        if top_logprobs > 0:
            body["logprobs"] = True
            body["top_logprobs"] = top_logprobs
        return body

    def _format_rejected(self, request: dict[str, Any], exc: openai.APIStatusError, on_retry: Any) -> bool:
        """A 400/422 for a response_format we had not seen accepted: remember, and True to ask again with
        the next weaker one (json_schema -> json_object -> none)."""
        kind = (request.get("response_format") or {}).get("type")
        if kind == "json_schema" and self.schema_supported is None:
            self.schema_supported = False
            if on_retry:
                on_retry(f"endpoint rejected JSON-schema output ({exc.status_code}); asking for JSON mode instead")
            return True
        if kind == "json_object" and self.json_mode_supported is None:
            # Some servers reject JSON mode; ask again without it and remember.
            self.json_mode_supported = False
            if on_retry:
                on_retry(f"endpoint rejected JSON mode ({exc.status_code}); continuing without it")
            return True
        return False

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

    def _format_accepted(self, request: dict[str, Any]) -> None:
        kind = (request.get("response_format") or {}).get("type")
        if kind == "json_schema":
            self.schema_supported = True
        elif kind == "json_object":
            self.json_mode_supported = True

    def _retry_wait(self, exc: openai.APIError, retries: int, waited: float) -> tuple[float, bool]:
        """Seconds to wait before retrying a call that failed before it started, and whether it is a backoff
        from a 429 that named no wait; raises when it may not be retried (not retryable, out of retries, or
        over max_retry_wait)."""
        status = isinstance(exc, openai.APIStatusError)
        if status and not _retryable(exc):  # type: ignore[arg-type]
            raise exc
        limited = isinstance(exc, openai.RateLimitError)
        url = self.shown_url
        asked = _retry_after(exc) if status else None  # type: ignore[arg-type]
        if limited and asked is not None:
            # "Retry at once", again and again, would spin: 0 is backed off like a 429 naming no wait, and a
            # named wait is at least _MIN_NAMED_WAIT (a few hundred attempts at most within max_retry_wait).
            asked = max(asked, _MIN_NAMED_WAIT) if asked > 0 else None
        # A 429 is tried again for as long as max_retry_wait allows, however many attempts that takes: after
        # the wait it names, or (a local server while it is busy) with exponential backoff and jitter.
        patient = limited and asked is None
        if retries >= self.max_retries and not limited:
            raise exc
        delay = asked if asked is not None else min(_MAX_BACKOFF, _INITIAL_BACKOFF * 2**retries)
        if asked is None:
            delay *= 1 - 0.25 * random.random()
        left = self.max_retry_wait - waited
        if patient and left >= _INITIAL_BACKOFF / 4:
            delay = min(delay, left)  # the last wait fills what max_retry_wait leaves (a named wait is kept)
        if waited + delay > self.max_retry_wait:
            if limited:
                if asked is not None and asked > self.max_retry_wait:
                    why = f"it asks to wait {seconds(asked)} s"
                elif patient:
                    why = f"still refused after {retries + 1} attempts and {seconds(waited)} s of backing off"
                else:
                    why = f"still refused after {seconds(waited)} s of waiting"
                raise EndpointUnavailable(
                    f"rate limited by {url}: {why}, more than max_retry_wait allows "
                    f"({seconds(self.max_retry_wait)} s a call): try again later or raise max_retry_wait",
                    strip_userinfo(self.base_url),
                ) from exc
            raise exc
        return delay, patient

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
(for the scripted server and proxies; never in the messages). Raises openai.OpenAIError subclasses when it
        finally fails (EndpointUnavailable when it gave up waiting). ``cut_off``: filled when the call is cancelled
        after its request went out, with what it had cost (the caller counts it: the server did the work)."""
        async with self._limit:
            self.calls += 1
            start = time.perf_counter()
            attempts = retries = stream_retries = 0
            waited = 0.0
            while True:
                attempts += 1
                request = self._request(messages, temperature, max_tokens, json_mode, schema, top_logprobs)
                self._name_call(request, call_id)
                state = StreamState(logprobs=[] if top_logprobs > 0 else None)
                try:
                    text, usage, finish = await self._stream(request, on_delta, state)
                except asyncio.CancelledError:
                    if cut_off is not None:
                        _cut_off_cost(cut_off, messages, state)
                    raise
                except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                    if self._learn_overflow(messages, exc):
                        raise  # the caller shrinks the prompt (core.runtime.engine); never a format to drop
                    if "response_format" in request and self._format_rejected(request, exc, on_retry):
                        continue
                    raise
                except _StreamBroken as broken:
                    if stream_retries >= 1:
                        raise broken.error from None
                    stream_retries += 1
                    if on_retry:
                        on_retry(f"{self.describe_error(broken.error)}; retrying once")
                    continue
                except EndpointUnavailable:
                    raise
                except (openai.APIStatusError, openai.APIConnectionError) as exc:
                    if self._learn_overflow(messages, exc):
                        raise  # the same request would fail again: not retried here
                    delay, backoff = self._retry_wait(exc, retries, waited)
                    retries += 1
                    waited += delay
                    if on_retry:
                        on_retry(self._retry_message(exc, delay, backoff, waited))
                    await asyncio.sleep(delay)
                    continue
                self._format_accepted(request)
                break
            return self._result(messages, text, usage, finish, state, time.perf_counter() - start, attempts)

    def _name_call(self, request: dict[str, Any], call_id: CallId | None) -> None:
        """Name the call in a request header and, on llama.cpp, send it to the agent's own slot (whose cache
        holds that agent's last prompt)."""
        if call_id is None:
            return
        request["extra_headers"] = {CALL_ID_HEADER: call_id.header_value()}
        slot = self._slot_for(call_id.role)
        if slot is not None:
            request["extra_body"] = {**request.get("extra_body", {}), "id_slot": slot}

    def _retry_message(self, exc: openai.APIError, delay: float, backoff: bool, waited: float) -> str:
        """What the caller's ``on_retry`` hears before a retry of a call that failed before it started."""
        if backoff:
            return (f"rate limited by {self.shown_url} (no Retry-After), retrying in {seconds(delay)} s "
                    f"({seconds(waited)} s of the {seconds(self.max_retry_wait)} s max_retry_wait)")
        if isinstance(exc, openai.RateLimitError):
            return f"rate limited by {self.shown_url}, retrying in {seconds(delay)} s"
        return f"{self.describe_error(exc)}; retrying in {seconds(delay)} s"

    def _result(self, messages: list[dict[str, str]], text: str, usage: tuple[int, int] | None, finish: str | None,
                state: StreamState, latency: float, attempts: int) -> ChatResult:
        """The finished call; its token counts estimated (and flagged) when the endpoint reported none."""
        tops = state.logprobs or None
        if usage is not None:
            self._learn_chars_per_token(messages, usage[0])
            return ChatResult(text, usage[0], usage[1], False, latency, attempts, finish, tops, state.cut_short,
                              state.cached)
        return ChatResult(text, *estimate_usage(messages, text), True, latency, attempts, finish, tops,
                          state.cut_short, state.cached)

    async def _stream(
        self, request: dict[str, Any], on_delta: DeltaCallback | None, state: StreamState
    ) -> tuple[str, tuple[int, int] | None, str | None]:
        # The SDK sends the request (auth, timeouts, status errors); the body is read as raw SSE lines
        # (core/llm/stream.py), skipping the SDK's per-chunk model construction. ``state`` is the caller's:
        # what streamed before a cancel stays readable there.
        opened = self._client.chat.completions.with_streaming_response.create(**request)
        state.sent = True
        response = await self._answer_within(opened.__aenter__())
        http_request = response.http_response.request
        bound = ReplyBound.for_call(request["max_tokens"], self.min_tokens_per_second, self._timeout)
        deadline = asyncio.timeout(bound.seconds)
        try:
            async with deadline:
                done = False
                async for data in sse_data(response.iter_lines()):
                    # After [DONE] the body is read to its end (nothing should follow), so that the
                    # connection goes back to the pool instead of being closed.
                    done = done or data.startswith(DONE)
                    if done:
                        continue
                    for piece in read_chunk(data, state, http_request, self.shown_url):
                        if on_delta:
                            on_delta(piece)
                    state.cut_short = bound.overrun(state.chunks, state.total)
                    if state.cut_short:  # a server that ignores max_tokens: stop reading, close the stream
                        state.finish = "length"
                        break
        except TimeoutError:
            if not deadline.expired():
                raise
            state.cut_short, state.finish = bound.too_slow(state.chunks, state.total), "length"
        except httpx.TimeoutException as exc:  # silence longer than call_timeout inside the stream
            raise _StreamBroken(openai.APITimeoutError(request=exc._request or http_request)) from exc
        except httpx.HTTPError as exc:  # a connection dropped mid-stream
            raise _StreamBroken(
                openai.APIConnectionError(message=str(exc) or type(exc).__name__, request=exc._request or http_request)
            ) from exc
        finally:
            await opened.__aexit__(None, None, None)
        return reply_text(state), state.usage, state.finish
