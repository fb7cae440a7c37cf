"""What a llama.cpp server says of itself (GET /props): the context of one request slot
(``default_generation_settings.n_ctx``) and how many slots it serves (``total_slots``). Any other server,
or any error, says nothing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import openai

from core.llm.httpx_lib import httpx
from core.llm.urls import strip_userinfo


@dataclass(frozen=True)
class ServerProps:
    n_ctx: int | None = None
    total_slots: int | None = None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


async def read_props(client: openai.AsyncOpenAI, base_url: str, wait: float) -> ServerProps:
    """The server's /props (beside its /v1), within ``wait`` seconds; empty when it does not answer them."""
    root = strip_userinfo(base_url).rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    try:
        response = await asyncio.wait_for(client.get(f"{root}/props", cast_to=httpx.Response), timeout=wait)
        data = response.json()
    except (openai.OpenAIError, httpx.HTTPError, TimeoutError, ValueError):
        return ServerProps()
    if not isinstance(data, dict):
        return ServerProps()
    settings = data.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    return ServerProps(n_ctx=_positive(n_ctx), total_slots=_positive(data.get("total_slots")))
