"""The LLM layer: the real ``openai.AsyncOpenAI`` client, streaming, against any OpenAI-compatible URL.

The SDK retries 408/409/429/5xx itself (``max_retries``) before a stream starts. A stream that stalls
(longer than the call timeout between bytes) or drops mid-way is retried once here, because the SDK
cannot retry a response it has already begun to hand us.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai

from core.sessions.model import redact_url

try:  # the openai SDK moved to the httpx2 fork; older releases use httpx
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx  # type: ignore[no-redef]

DeltaCallback = Callable[[str], None]


class EndpointError(RuntimeError):
    """The endpoint cannot be used; the message is one line fit to show a user."""


@dataclass
class ChatResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    usage_estimated: bool
    latency_s: float
    attempts: int
    # Per generated token, the top logprobs the endpoint returned (asked for with top_logprobs=k);
    # None when not asked for or when the endpoint sent none.
    top_logprobs: list[list[float]] | None = None


def estimate_tokens(text: str) -> int:
    """Rough token count (about 4 characters a token) for servers that report no usage."""
    return max(1, len(text) // 4) if text else 0


def _prompt_chars(messages: list[dict[str, str]]) -> int:
    return sum(len(m.get("content") or "") for m in messages)


def describe_api_error(exc: BaseException, base_url: str) -> str:
    """One line for a user, naming the URL; never includes request headers (they hold the key)."""
    if isinstance(exc, openai.APITimeoutError):
        return f"the model endpoint {base_url} timed out"
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
        message = str(getattr(exc, "message", "") or exc).splitlines()[0][:200]
        return f"the endpoint {base_url} answered status {exc.status_code}: {message}"
    return f"model call failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


# Placeholders sent when no key is set: not secrets, and too common to scrub from messages.
_PLACEHOLDER_KEYS = {"", "not-needed", "demo"}


def redact_secret(text: str, secret: str | None) -> str:
    if not secret or secret in _PLACEHOLDER_KEYS:
        return text
    return text.replace(secret, "***")


class LLMClient:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str | None = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 2,
        max_concurrency: int = 4,
        sampling_extras: dict[str, Any] | None = None,
    ) -> None:
        self.base_url = base_url
        self.model = model or ""
        self._timeout = timeout
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key,
            max_retries=max_retries,
            # read= is the longest silence tolerated inside a stream: a stalled stream times out.
            timeout=openai.Timeout(timeout, connect=min(10.0, timeout)),
        )
        self._limit = asyncio.Semaphore(max_concurrency)
        self._extras = {k: v for k, v in (sampling_extras or {}).items() if v is not None}
        self.json_mode_supported: bool | None = None  # learned on first call
        self.calls = 0

    async def close(self) -> None:
        await self._client.close()

    def describe_error(self, exc: BaseException) -> str:
        """describe_api_error, with the API key cut out (a server's error text may echo the key it got,
        as some proxies do) and the URL without user:password@ or a ?api-key= query: these messages
        reach notices, sessions and JSON lines."""
        return redact_secret(describe_api_error(exc, redact_url(self.base_url)), self._client.api_key)

    async def list_models(self) -> list[str]:
        try:
            page = await self._client.models.list()
        except openai.OpenAIError as exc:
            raise EndpointError(self.describe_error(exc)) from None
        return [m.id for m in page.data]

    async def ensure_model(self) -> str:
        """Use the configured model, else the first one the endpoint lists."""
        if self.model:
            return self.model
        models = await self.list_models()
        if not models:
            raise EndpointError(f"the endpoint {redact_url(self.base_url)} lists no models: pass --model NAME")
        self.model = models[0]
        return self.model

    def _request(
        self,
        messages: list[dict[str, str]],
        temperature: float,
        max_tokens: int,
        json_mode: bool,
        top_logprobs: int = 0,
    ) -> dict:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        extra_body: dict[str, Any] = {}
        if "top_p" in self._extras:
            body["top_p"] = self._extras["top_p"]
        for name in ("top_k", "min_p"):  # not OpenAI parameters: local servers read them from the body
            if name in self._extras:
                extra_body[name] = self._extras[name]
        if extra_body:
            body["extra_body"] = extra_body
        if json_mode and self.json_mode_supported is not False:
            body["response_format"] = {"type": "json_object"}
        if top_logprobs > 0:
            body["logprobs"] = True
            body["top_logprobs"] = top_logprobs
        return body

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float,
        max_tokens: int,
        json_mode: bool = True,
        on_delta: DeltaCallback | None = None,
        on_retry: Callable[[str], None] | None = None,
        top_logprobs: int = 0,
    ) -> ChatResult:
        """One streamed completion. Raises openai.OpenAIError subclasses when it finally fails.
        ``top_logprobs`` > 0 asks for each token's top logprobs (``ChatResult.top_logprobs``)."""
        async with self._limit:
            self.calls += 1
            start = time.perf_counter()
            attempts = 0
            while True:
                attempts += 1
                request = self._request(messages, temperature, max_tokens, json_mode, top_logprobs)
                logprobs: list[list[float]] = []
                try:
                    text, usage = await self._stream(request, on_delta, logprobs)
                except openai.BadRequestError as exc:
                    if "response_format" in request and self.json_mode_supported is None:
                        # Some servers reject JSON mode; ask again without it and remember.
                        self.json_mode_supported = False
                        if on_retry:
                            on_retry(f"endpoint rejected JSON mode ({exc.status_code}); continuing without it")
                        continue
                    raise
                except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                    if attempts >= 2:
                        raise
                    if on_retry:
                        on_retry(f"{self.describe_error(exc)}; retrying once")
                    continue
                if "response_format" in request:
                    self.json_mode_supported = True
                break
            latency = time.perf_counter() - start
            tops = logprobs if top_logprobs > 0 and logprobs else None
            if usage is not None:
                return ChatResult(text, usage[0], usage[1], False, latency, attempts, tops)
            return ChatResult(
                text,
                estimate_tokens("x" * _prompt_chars(messages)),
                estimate_tokens(text),
                True,
                latency,
                attempts,
                tops,
            )

    async def _stream(
        self, request: dict[str, Any], on_delta: DeltaCallback | None, logprobs: list[list[float]] | None = None
    ) -> tuple[str, tuple[int, int] | None]:
        parts: list[str] = []
        usage: tuple[int, int] | None = None
        stream = await self._client.chat.completions.create(**request)
        try:
            async for chunk in stream:
                if chunk.usage is not None:
                    usage = (chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
                for choice in chunk.choices:
                    piece = choice.delta.content if choice.delta else None
                    if piece:
                        parts.append(piece)
                        if on_delta:
                            on_delta(piece)
                    if logprobs is not None and getattr(choice, "logprobs", None) is not None:
                        logprobs.extend(token_top_logprobs(choice.logprobs))
        except httpx.HTTPError as exc:  # a connection dropped mid-stream surfaces as a raw httpx error
            request = exc._request or httpx.Request("POST", self.base_url)  # not every httpx error has one
            raise openai.APIConnectionError(message=str(exc) or type(exc).__name__, request=request) from exc
        finally:
            await stream.close()
        return "".join(parts), usage


def token_top_logprobs(choice_logprobs: Any) -> list[list[float]]:
    """Per token of a streamed chunk's ``logprobs.content``, the returned top logprobs (the chosen token's
    own logprob when the endpoint sent no alternatives). Anything malformed is skipped, never raised."""
    out: list[list[float]] = []
    for token in getattr(choice_logprobs, "content", None) or []:
        tops = [getattr(t, "logprob", None) for t in (getattr(token, "top_logprobs", None) or [])]
        values = [float(v) for v in tops if isinstance(v, int | float)]
        if not values and isinstance(getattr(token, "logprob", None), int | float):
            values = [float(token.logprob)]
        if values:
            out.append(values)
    return out
