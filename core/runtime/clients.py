"""LLM clients made from the settings: the run's own, an agent's own endpoint, or a method's second model."""

from __future__ import annotations

from core.llm.client import LLMClient
from core.runtime.config import Settings, SlotPlacement


def sampling_extras(settings: Settings) -> dict[str, float | int | None]:
    return {"top_p": settings.top_p, "top_k": settings.top_k, "min_p": settings.min_p}


def client_for(
    settings: Settings,
    url: str,
    api_key: str,
    model: str | None,
    *,
    max_concurrency: int | None = None,
) -> LLMClient:
    """An LLM client with the settings' timeouts, retries, bounded waits and sampling: the run's own, an
    agent's own endpoint, or a method's second model (TopoWeaver-R1's orchestrator) are all made here."""
    client = LLMClient(
        url,
        api_key,
        model,
        timeout=settings.call_timeout,
        first_byte_timeout=settings.first_byte_timeout,
        max_retries=settings.max_retries,
        max_retry_wait=settings.max_retry_wait,
        min_tokens_per_second=settings.min_tokens_per_second,
        max_concurrency=max_concurrency or settings.max_concurrency,
        sampling_extras=sampling_extras(settings),
    )
    client.slot_table.per_agent = settings.llama_slots == SlotPlacement.PER_AGENT
    return client
