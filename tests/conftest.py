"""Shared fixtures: one scripted server and one MiniLM model per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# The helpers in tests/support assert too: their failures read like the tests' own.
pytest.register_assert_rewrite("tests.support")

# Tests never reach the network: MiniLM comes from the bundled package.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session", autouse=True)
def _scripted_code_may_run_unisolated() -> None:
    """The code tests run comes from the scripted server (ours): where bubblewrap cannot run, it runs without
    isolation, as a user who passed --allow-unisolated-code would. The refusal has its own tests, which
    turn this off (tests/core/evaluation/test_unisolated_code.py)."""
    from core.evaluation.sandbox import allow_unisolated_code

    allow_unisolated_code(True)


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    from core.llm.embeddings import shared_embedder

    model = shared_embedder()
    model.load()
    return model


@pytest.fixture()
def demo_server() -> Iterator[object]:
    from core.demo.scripts import demo_script
    from core.demo.server import ScriptedServer

    with ScriptedServer(demo_script) as server:
        yield server
