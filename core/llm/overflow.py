"""A request the server refused because it does not fit the model's context, in each server's own words.

* llama.cpp: HTTP 400, ``{"error": {"type": "exceed_context_size_error", "message": "request (1631 tokens)
  exceeds the available context size (512 tokens), try increasing it", "n_prompt_tokens": 1631, "n_ctx": 512}}``
  (older builds: "the request exceeds the available context size");
* vLLM: HTTP 400, "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens
  (1100 in the messages, 1000 in the completion)…", or "… your request has 2100 input tokens", or
  "'max_tokens' … is too large: 4096. This model's maximum context length is 2048 tokens and your request
  has 100 input tokens";
* Ollama: "the input length exceeds the context length" (and older "prompt too long; exceeded max context
  length by N tokens");
* OpenAI: code ``context_length_exceeded``, "This model's maximum context length is 8192 tokens. However,
  your messages resulted in 9000 tokens…" or "Your input exceeds the context window of this model".

What the error says of the context size and of the prompt's size in tokens is read when it says it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import openai

_PHRASES = (
    "exceed_context_size_error",  # llama.cpp's error type
    "exceeds the available context size",  # llama.cpp
    "context_length_exceeded",  # OpenAI's code
    "maximum context length",  # vLLM, OpenAI
    "exceeds the context length",  # Ollama
    "exceeded max context length",  # older Ollama
    "exceeds the context window",  # OpenAI
)

_CONTEXT_RES = (
    re.compile(r"maximum context length is (\d+)"),
    re.compile(r"available context size \((\d+) tokens?\)"),
    re.compile(r"context (?:length|size|window) (?:is |of )?(\d+)"),
)
_PROMPT_RES = (
    re.compile(r"\((\d+) in the messages"),
    re.compile(r"(\d+) in your prompt"),
    re.compile(r"request has (\d+) input tokens"),
    re.compile(r"messages resulted in (\d+) tokens"),
    re.compile(r"request \((\d+) tokens?\) exceeds"),
)


@dataclass(frozen=True)
class ContextOverflow:
    """The server's refusal: its context size and the prompt's tokens when it named them."""

    n_ctx: int | None
    prompt_tokens: int | None
    message: str  # the server's own words, one line

    def describe(self) -> str:
        sizes = []
        if self.prompt_tokens:
            sizes.append(f"{self.prompt_tokens} prompt tokens")
        if self.n_ctx:
            sizes.append(f"a context of {self.n_ctx}")
        return "the request exceeds the model's context" + (f" ({' for '.join(sizes)})" if sizes else "")


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _first(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return int(found[1])
    return None


def context_overflow(exc: BaseException) -> ContextOverflow | None:
    """The overflow ``exc`` reports, or None when it is some other error."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code < 400:
        return None
    body = exc.body
    message = str(getattr(exc, "message", "") or exc)
    try:
        text = f"{message} {json.dumps(body, default=str)}" if body is not None else message
    except (TypeError, ValueError):  # pragma: no cover - the SDK's body is parsed JSON or a string
        text = message
    lowered = text.lower()
    if not any(phrase in lowered for phrase in _PHRASES):
        return None
    fields = body if isinstance(body, dict) else {}
    n_ctx = _int(fields.get("n_ctx")) or _first(_CONTEXT_RES, lowered)
    prompt = _int(fields.get("n_prompt_tokens")) or _first(_PROMPT_RES, lowered)
    shown = (message.splitlines() or [""])[0][:300]
    return ContextOverflow(n_ctx, prompt, shown)
