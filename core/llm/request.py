"""The body of one streamed chat completion request: the sampling settings (``top_k``/``min_p``, which
are not OpenAI parameters, go in the body's extras where local servers read them), the run's seed, the
response_format, logprobs, and the call's name (a header) and llama.cpp slot (``id_slot``)."""

from __future__ import annotations

from typing import Any

from core.llm.call_id import CALL_ID_HEADER, CallId
from core.llm.request_seed import REQUEST_SEED

_BODY_EXTRAS = ("top_k", "min_p")  # not OpenAI parameters: local servers read them from the body


def chat_request(model: str, messages: list[dict[str, str]], *, temperature: float, max_tokens: int,
                 extras: dict[str, Any], response_format: dict[str, Any] | None,
                 top_logprobs: int = 0) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for one streamed call (usage included)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    seed = REQUEST_SEED.get()
    if seed is not None:
        body["seed"] = seed
    if "top_p" in extras:
        body["top_p"] = extras["top_p"]
    extra_body = {name: extras[name] for name in _BODY_EXTRAS if name in extras}
    if extra_body:
        body["extra_body"] = extra_body
    if response_format is not None:
        body["response_format"] = response_format
    if top_logprobs > 0:
        body["logprobs"] = True
        body["top_logprobs"] = top_logprobs
    return body


def name_call(request: dict[str, Any], call_id: CallId, slot: int | None) -> None:
    """Name the call in a request header (for the scripted server and proxies; never in the messages) and,
    on llama.cpp, send it to the agent's own slot (whose cache holds that agent's last prompt)."""
    request["extra_headers"] = {CALL_ID_HEADER: call_id.header_value()}
    if slot is not None:
        request["extra_body"] = {**request.get("extra_body", {}), "id_slot": slot}
