"""Token estimates for servers that report no usage, and the cost of a call cut off in flight (a module of
its own: the run's memory and the engine need it without loading the openai SDK)."""

from __future__ import annotations

from dataclasses import dataclass


def estimate_tokens(text: str) -> int:
    """Rough token count (about 4 characters a token) for servers that report no usage."""
    return max(1, len(text) // 4) if text else 0


def estimate_usage(messages: list[dict[str, str]], reply: str) -> tuple[int, int]:
    """(prompt, completion) tokens of a call whose server reported no usage, from their characters."""
    chars = sum(len(m.get("content") or "") for m in messages)
    return estimate_tokens("x" * chars), estimate_tokens(reply)


@dataclass
class CutOffCost:
    """What a call cut off in flight (a time budget, a cancel) had cost when it stopped: the prompt the
    server was sent, the reply streamed so far; the server's own usage when it had reported one, else an
    estimate (``estimated``). Filled by LLMClient.chat for a caller that counts it (the engine)."""

    sent: bool = False  # the request went out: nothing is counted for a call still waiting its turn
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


NOT_REPORTED = "not reported"


def cached_share(cached: int | None, prompt_tokens: int) -> str:
    """Prompt tokens served from the server's prefix cache, as every face shows them: "cached 3,707 (25 %)",
    or "not reported" when the server said nothing about caching (None)."""
    if cached is None:
        return NOT_REPORTED
    share = f" ({100 * cached / prompt_tokens:.0f} %)" if prompt_tokens > 0 else ""
    return f"cached {cached:,}{share}"
