"""The real-model tier's server: llama-server with SmolLM2-135M-Instruct on a free loopback port, behind a
small recording proxy (tests/realmodel/llama_process.py: every request body, every usage count the server
reported). Without the build the tier
skips on a developer's machine, and fails in CI (CI=true), where .ci/run sets it up first."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

import pytest

from tests.realmodel.llama_process import Proxy, ServerFailed, llama_server, reply_field
from tests.realmodel.setup_llama import CACHE, MODEL_MEMBER, SERVER

MODEL = CACHE / "model" / MODEL_MEMBER


@dataclass
class Recorded:
    bodies: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # the bodies of chat requests the server refused (4xx)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # llama.cpp's timings.cache_n: the prompt tokens it took from a slot's cache
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seen(self, headers: Message, body: bytes, status: int, payload: bytes) -> None:
        """One chat reply, as the proxy passes it on: a served request's body and counts, or a refusal."""
        with self.lock:
            if status == 200:
                usage = reply_field(payload, "usage")
                self.bodies.append(json.loads(body or b"{}"))
                self.prompt_tokens += int(usage.get("prompt_tokens", 0))
                self.completion_tokens += int(usage.get("completion_tokens", 0))
                self.cached_tokens += int(reply_field(payload, "timings").get("cache_n", 0))
            elif 400 <= status < 500:
                self.refusals.append(payload.decode("utf-8", "replace"))


@dataclass
class RealModel:
    base_url: str  # the proxy's
    recorded: Recorded
    proxy: Proxy

    def settled(self) -> None:
        """Wait for the chat requests in flight: an earlier run that hung up on a call (its time budget) leaves
        the server finishing it, and the proxy records its tokens when it does. A test that compares counts
        starts after that."""
        self.proxy.settled()


@contextlib.contextmanager
def _serve(ctx_size: int, parallel: int, *, hide_props: bool = False) -> Iterator[RealModel]:
    if not SERVER.is_file() or not MODEL.is_file():
        message = "llama-server or the model is missing: python -m tests.realmodel.setup_llama builds them"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        with llama_server(SERVER, MODEL, ctx_size=ctx_size, parallel=parallel) as port:
            recorded = Recorded()
            with Proxy(port, recorded.seen, hide_props=hide_props, timeout_s=300).serving() as proxy:
                yield RealModel(proxy.base_url, recorded, proxy)
    except ServerFailed as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def real_model() -> Iterator[RealModel]:
    with _serve(4096, 2) as model:
        yield model


@pytest.fixture()
def small_context_model() -> Iterator[RealModel]:
    """A context of 512 tokens a request (1024 over 2 slots; llama.cpp's least is 512) that the server does not
    report (/props hidden): prompts go over it, and the app learns its size from the server's refusal."""
    with _serve(1024, 2, hide_props=True) as model:
        yield model
