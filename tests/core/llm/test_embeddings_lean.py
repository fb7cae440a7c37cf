"""Routing's embedder: unchanged descriptors are not embedded again, and the int8 model is an opt-in that
stays close to fp32 (bench/routing.py measures how often the routed graph is the same)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from core.llm.embeddings import Embedder
from core.runtime.config import Settings
from core.runtime.config_file import load_settings

TEXTS = ["I need the failing test cases for make_palindrome.", "I provide the complete implementation."]


class CountingModel:
    """The real model, counting how many texts it is asked to encode."""

    def __init__(self, model: Any) -> None:
        self.model, self.encoded = model, 0

    def encode(self, texts: list[str], **kw: Any) -> np.ndarray:
        self.encoded += len(texts)
        return self.model.encode(texts, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


def test_unchanged_descriptors_come_from_the_cache(embedder: Embedder) -> None:
    own = Embedder()
    own.load()
    counting = CountingModel(own._model)
    own._model = counting
    first = own.embed(TEXTS)
    again = own.embed([TEXTS[1], TEXTS[0], TEXTS[1]])
    assert counting.encoded == 2  # the second call embedded nothing new
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[1], first[0])
    again[0][:] = 0  # a caller changing its rows does not change the cache
    assert np.array_equal(own.embed([TEXTS[1]])[0], first[1])
    own.clear_cache()
    own.embed(TEXTS)
    assert counting.encoded == 4
    assert np.allclose(first, embedder.embed(TEXTS), atol=1e-6)  # the same vectors as the shared embedder


def test_int8_is_an_opt_in_close_to_fp32(embedder: Embedder) -> None:
    int8 = Embedder(int8=True)
    int8.load()
    assert "int8" in int8.source and "int8" not in embedder.source
    cosines = (int8.embed(TEXTS) * embedder.embed(TEXTS)).sum(axis=1)
    assert np.all(cosines > 0.95)


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("yes", True), ("0", False), ("off", False)])
def test_embedding_int8_from_the_environment(value: str, expected: bool) -> None:
    assert load_settings(None, environ={"SWARM_TUI_EMBEDDING_INT8": value}, cli={}).embedding_int8 is expected
    assert Settings().embedding_int8 is False


def test_a_bad_int8_flag_is_one_line() -> None:
    from core.runtime.config import ConfigError

    with pytest.raises(ConfigError, match="SWARM_TUI_EMBEDDING_INT8"):
        load_settings(None, environ={"SWARM_TUI_EMBEDDING_INT8": "maybe"}, cli={})
