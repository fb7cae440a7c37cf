"""The swarm's model calls through inspect's own model: an OpenAI-compatible endpoint on 127.0.0.1 for one
sample, served from inside the sample's task, that hands each request to inspect's agent bridge.

inspect's in-process bridge (``inspect_ai.agent.agent_bridge``) patches the openai client for requests to the
model "inspect", but refuses a streamed request, and the swarm's client always streams (it shows every agent
as it writes). So the swarm talks to this endpoint instead, which hands each request body to the bridge's own
completions handler (``inspect_completions_api_request``, the one the in-process and sandbox bridges use):
the call goes through the sample's model with inspect's limits, retries, usage accounting and transcript,
and the reply comes back to the swarm as a stream of one piece. The server runs in the sample's task (its
context: the active model, the transcript), on a free loopback port, for as long as the sample's run.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from inspect_ai.agent import agent_bridge
from inspect_ai.agent._bridge.completions import inspect_completions_api_request
from inspect_ai.util import LimitExceededError

from core.llm.call_id import CALL_ID_HEADER

BRIDGE_MODEL = "inspect"  # the bridge's name for the sample's own model
# The name the swarm asks for: nothing starting with "inspect", which agent_bridge()'s patch of the openai
# client would take (and refuse, as a stream) before the request reached this endpoint.
MODEL = "via-inspect"
# The request fields the bridge reads; the swarm's others (llama.cpp's id_slot, stream options) stay here.
FORWARDED = ("model", "messages", "temperature", "max_tokens", "top_p", "stop", "seed", "response_format")


@dataclass
class BridgeState:
    """What the endpoint saw: a limit inspect raised (it ends the sample once the run has stopped)."""

    limit: LimitExceededError | None = None
    calls: int = 0
    errors: list[str] = field(default_factory=list)


def _chunk(completion_id: str, delta: dict[str, Any], finish: str | None, usage: dict[str, Any] | None) -> bytes:
    data: dict[str, Any] = {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()),
                            "model": MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        data["usage"] = usage
    return f"data: {json.dumps(data)}\n\n".encode()


async def _chat(bridge: Any, state: BridgeState, request: web.Request) -> web.StreamResponse:
    body = await request.json()
    stream = bool(body.get("stream"))
    payload = {k: v for k, v in body.items() if k in FORWARDED}
    payload["model"] = BRIDGE_MODEL
    state.calls += 1
    try:
        # The call's identity (core.llm.call_id) travels on, as the bridge's extra header for the model's request.
        identity = request.headers.get(CALL_ID_HEADER)
        completion = await inspect_completions_api_request(payload, {CALL_ID_HEADER: identity} if identity else None,
                                                           bridge)
    except LimitExceededError as exc:  # the sample's limit: the run stops; the solver raises it afterwards
        state.limit = state.limit or exc
        return web.json_response({"error": {"message": f"inspect limit: {exc}", "type": "limit"}}, status=400)
    except Exception as exc:  # one failed call fails that agent's turn, as any endpoint's error does
        state.errors.append(f"{type(exc).__name__}: {exc}")
        return web.json_response({"error": {"message": str(exc)[:500], "type": "server_error"}}, status=500)
    choice = completion.choices[0]
    text = choice.message.content or ""
    usage = completion.usage.model_dump() if completion.usage is not None else None
    if not stream:
        return web.json_response(completion.model_dump())
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(_chunk(completion.id, {"role": "assistant", "content": text}, None, None))
    await response.write(_chunk(completion.id, {}, choice.finish_reason or "stop", usage))
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


async def _models(_request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "inspect"}]})


@asynccontextmanager
async def inspect_endpoint() -> AsyncIterator[tuple[str, BridgeState]]:
    """(the endpoint's base URL, what it saw) while the block runs; call it from the sample's solver."""
    state = BridgeState()
    async with agent_bridge() as bridge:
        app = web.Application()

        async def chat(request: web.Request) -> web.StreamResponse:
            return await _chat(bridge, state, request)

        app.router.add_get("/v1/models", _models)
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            yield f"http://127.0.0.1:{port}/v1", state
        finally:
            await runner.cleanup()
