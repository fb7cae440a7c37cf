"""How the scripted server answers, apart from what it says: pacing, what it reports (usage, logprobs,
caching, its context) and how it refuses a request over its context. One value object, so that a test or
a face states the endpoint it plays in one place (``ScriptedServer(script, ServerBehaviour(latency=0.4))``)
instead of threading a dozen keywords through every layer that starts a server."""

from __future__ import annotations

from dataclasses import dataclass

# How each server refuses a request that does not fit its context (ServerBehaviour's ``overflow_style``).
OVERFLOW_STYLES = ("llama.cpp", "vllm", "ollama", "openai")
# How a reply reports the prompt tokens the server's KV cache held (ServerBehaviour's ``prefix_cache``).
PREFIX_CACHE_STYLES = ("openai", "llama.cpp")


@dataclass(frozen=True)
class ServerBehaviour:
    """``model``: the one model GET /v1/models lists. ``chunk_chars``/``chunk_delay``: a streamed reply's
    pieces and the pause between them; ``latency``: the wait before any answer; ``stall_seconds``: how long
    a "stall" fault stays silent. ``usage``: report token usage when asked.

    ``logprobs``: answer a request's ``logprobs``/``top_logprobs`` (deterministic per text, see
    scripted_logprobs); False plays an endpoint that ignores them.

    ``context_size``: the model's context in (estimated) tokens; a request over it is refused as
    ``overflow_style`` (OVERFLOW_STYLES) refuses one: the prompt alone over it, or for vLLM the prompt
    plus max_tokens. ``report_context`` serves it at GET /props, as llama.cpp does.

    ``prefix_cache`` plays a server's KV cache: each reply says how many of its prompt's (estimated) tokens
    began the previous prompt of the same slot (the request's ``id_slot``, else the calling agent), as
    "openai" (usage.prompt_tokens_details.cached_tokens, also vLLM) or "llama.cpp" (timings.cache_n and
    prompt_n) report it; None: replies say nothing of caching. ``slots``: /props reports that many."""

    model: str = "scripted-demo"
    chunk_chars: int = 16
    chunk_delay: float = 0.0
    latency: float = 0.0
    usage: bool = True
    stall_seconds: float = 30.0
    logprobs: bool = True
    context_size: int | None = None
    overflow_style: str = "llama.cpp"
    report_context: bool = False
    prefix_cache: str | None = None
    slots: int | None = None

    def __post_init__(self) -> None:
        if self.overflow_style not in OVERFLOW_STYLES:
            raise ValueError(
                f"unknown overflow style {self.overflow_style!r}: choose one of {', '.join(OVERFLOW_STYLES)}")
        if self.prefix_cache is not None and self.prefix_cache not in PREFIX_CACHE_STYLES:
            raise ValueError(f"unknown prefix_cache {self.prefix_cache!r}: choose openai or llama.cpp")
        object.__setattr__(self, "chunk_chars", max(1, self.chunk_chars))
