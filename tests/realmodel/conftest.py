"""The real-model tier's server: llama-server with SmolLM2-135M-Instruct on a free loopback port, behind a
small recording proxy (tests/realmodel/llama_process.py: every request body, every usage count the server
reported). Without the build the tier
skips on a developer's machine, and fails in CI (CI=true), where .ci/run sets it up first."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest

from tests.realmodel.llama_process import Proxy, ServerFailed, llama_server
from tests.realmodel.setup_llama import CACHE, MODEL_MEMBER, SERVER
from tests.support.realmodel import RealModel, Recorded

MODEL = CACHE / "model" / MODEL_MEMBER


@contextlib.contextmanager
def _serve(ctx_size: int, parallel: int | None, *, hide_props: bool = False) -> Iterator[RealModel]:
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


@pytest.fixture()
def slot_per_agent() -> Iterator[RealModel]:
    """Five slots of 4096 tokens: one per agent of the code team and its Manager, as the app keeps them."""
    with _serve(5 * 4096, 5) as model:
        yield model


@pytest.fixture()
def default_server() -> Iterator[RealModel]:
    """llama-server as a user starts it, without --parallel: 4 slots over one unified KV cache, whose idle slots
    it saves to its host prompt cache and clears when a new task starts."""
    with _serve(4 * 4096, None) as model:
        yield model
