"""MiniLM through ONNX Runtime gives the same vectors, and so the same routing, as the torch backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.llm.embeddings import Embedder, bundled_model_path
from core.llm.onnx_minilm import ENV_BACKEND, ROW_TOKENS, OnnxMiniLM, pack_rows
from core.routing.dytopo import route_from_similarity, similarity_matrix
from core.runtime.demo_scenarios import SCENARIOS
from tests.support.embeddings import DEVELOPER_KEY, TESTER_QUERY
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def backends() -> tuple[Embedder, Embedder]:
    onnx, torch = Embedder(), Embedder(use_onnx=False)
    onnx.load()
    torch.load()
    return onnx, torch


def _pairs() -> list[tuple[str, str]]:
    """The conformance pairs: the paper's Table 9 pair, and every demo team's round-2 descriptors."""
    pairs = [(TESTER_QUERY, DEVELOPER_KEY)]
    for scenario in SCENARIOS.values():
        for table in scenario.descriptors.values():
            pairs += [table[r] for r in sorted(table)]
    return pairs


def test_onnx_is_the_backend_for_the_bundled_model(backends: tuple[Embedder, Embedder]) -> None:
    onnx, torch = backends
    assert onnx.source.endswith("ONNX Runtime") and "ONNX" not in torch.source
    assert onnx.dimension == torch.dimension == 384


def test_onnx_and_torch_vectors_and_similarities_agree(backends: tuple[Embedder, Embedder]) -> None:
    onnx, torch = backends
    texts = [t for pair in _pairs() for t in pair]
    a, b = onnx.embed(texts), torch.embed(texts)
    assert a.shape == b.shape and a.dtype == np.float32
    assert float(np.abs(a - b).max()) < 1e-5
    sims_a = [float(a[i] @ a[i + 1]) for i in range(0, len(texts), 2)]
    sims_b = [float(b[i] @ b[i + 1]) for i in range(0, len(texts), 2)]
    assert max(abs(x - y) for x, y in zip(sims_a, sims_b, strict=True)) < 1e-5
    assert sims_a[0] == pytest.approx(0.784, abs=0.005)  # Table 9's pair, as measured with torch


def test_onnx_and_torch_route_the_demo_rounds_identically(backends: tuple[Embedder, Embedder]) -> None:
    onnx, torch = backends
    for scenario in SCENARIOS.values():
        names = sorted(scenario.descriptors)
        queries = [scenario.descriptors[n][min(scenario.descriptors[n])][0] for n in names]
        keys = [scenario.descriptors[n][min(scenario.descriptors[n])][1] for n in names]
        graphs = []
        for backend in (onnx, torch):
            sim = similarity_matrix(backend.embed(queries), backend.embed(keys))
            graphs.append(route_from_similarity(names, sim, 0.3, 2, break_cycles=True))
        assert [(e.src, e.dst) for e in graphs[0].edges] == [(e.src, e.dst) for e in graphs[1].edges]
        assert graphs[0].order == graphs[1].order


def test_a_text_gets_the_same_vector_whatever_it_is_packed_with(backends: tuple[Embedder, Embedder]) -> None:
    # encode() packs several texts into one row, each seeing only its own tokens: a vector must not depend
    # on its neighbours, on its place in the row, or on how many rows a call takes.
    onnx, torch = backends
    long_text = "a descriptor far longer than one packed row, " * 20  # > ROW_TOKENS: a row of its own
    texts = [*[t for pair in _pairs() for t in pair][:14], "ok", "a much longer descriptor " * 12, long_text]
    together = onnx._model.encode(texts)
    alone = np.concatenate([onnx._model.encode([t]) for t in texts])
    one_row_a_call = onnx._model.encode(texts, batch_size=1)
    assert float(np.abs(together - alone).max()) < 1e-5
    assert float(np.abs(together - one_row_a_call).max()) < 1e-5
    assert float(np.abs(together - torch.embed(texts)).max()) < 1e-5  # and what sentence-transformers says


def test_pack_rows_puts_every_text_in_one_row_within_the_row_length() -> None:
    lengths = [19, 13, 23, 14, 13, 13, 23, 20, 21, 27, 14, 15, 90, 5]
    for row_tokens in (90, 128, 256):
        rows = pack_rows(lengths, row_tokens)
        assert sorted(i for row in rows for i in row) == list(range(len(lengths)))
        assert all(sum(lengths[i] for i in row) <= row_tokens for row in rows)
    # The fewest rows the total fits in, balanced: 12 descriptors of 215 tokens make two rows of ~108.
    rows = pack_rows(lengths[:12], ROW_TOKENS)
    assert len(rows) == 2 and {sum(lengths[i] for i in row) for row in rows} <= set(range(100, 116))
    assert pack_rows([], 128) == []
    assert pack_rows([12] * 5, 128) == [[0, 1, 2, 3, 4]]
    with pytest.raises(ValueError, match="does not fit"):
        pack_rows([200], 128)


def test_torch_can_be_chosen_and_a_damaged_export_is_rebuilt(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(ENV_BACKEND, "torch")
    forced = Embedder()
    forced.load()
    assert "ONNX" not in forced.source
    monkeypatch.delenv(ENV_BACKEND)
    folder = bundled_model_path()
    assert folder is not None
    said: list[str] = []
    first = OnnxMiniLM(folder, cache_dir=tmp_path, on_progress=said.append)
    assert said and "one-time export" in said[0]  # a missing file: exported, with a progress line
    expected = first.encode(["hello"])
    first.path.write_bytes(b"not an onnx file")
    said.clear()
    again = OnnxMiniLM(folder, cache_dir=tmp_path, on_progress=said.append)  # damaged: rebuilt at once
    assert any("damaged: rebuilding" in line for line in said)
    assert np.allclose(again.encode(["hello"]), expected, atol=1e-5)


def test_setup_exports_into_the_installation_and_a_fresh_home_finds_it(tmp_path: Path) -> None:
    """`swarm-tui setup` leaves the ONNX file with the installation: a run from an empty home reads it
    from there and never exports (so never imports torch)."""
    import subprocess
    import sys

    from core.llm.onnx_minilm import onnx_dirs

    root = ROOT
    env = {**__import__("os").environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"}
    setup = subprocess.run([sys.executable, "-m", "tui", "setup"], capture_output=True, text=True, env=env,
                           timeout=600)
    assert setup.returncode == 0, setup.stderr
    assert str(onnx_dirs()[0]) in setup.stdout
    code = ("import sys; from core.llm.embeddings import Embedder; e = Embedder(); e.load(); "
            "print(e.source, 'torch' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "ONNX Runtime" in run.stdout and run.stdout.strip().endswith("False")
    assert "one-time export" not in run.stderr
    assert not (tmp_path / "cache" / "swarm-tui").exists()  # no export into the fresh home
