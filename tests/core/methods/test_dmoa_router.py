"""DMoA's router without torch: the NumPy forward pass equals torch's GRUCell + Linear, weights round-trip
through .npz, an old .pt file converts once, and a DMoA run that does not train never imports torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.methods.dmoa.router import RouterError, RouterInfo, RouterSession, RouterStore, seeded_weights
from tests.support.paths import ROOT

NAMES = ["ProblemParser", "Solver", "Verifier"]


def test_the_numpy_forward_equals_torch_on_the_same_weights() -> None:
    torch = pytest.importorskip("torch")
    from core.methods.dmoa.train import GRURouter

    trained = GRURouter(4, seed=3)  # torch's own initialisation, as a trained file would hold
    weights = trained.to_weights()
    session = RouterSession(weights)
    h = trained.initial_state()
    rng = np.random.default_rng(0)
    for _ in range(5):  # several steps: the hidden state carries over
        x = rng.normal(size=384).astype(np.float32)
        with torch.no_grad():
            z_torch, h = trained(torch.as_tensor(x), h)
        z_numpy = session.step(x)
        assert np.allclose(z_numpy, z_torch.numpy(), atol=1e-5)
        assert np.allclose(session.h, h.numpy().reshape(-1), atol=1e-5)


def test_weights_round_trip_through_torch_and_npz(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from core.methods.dmoa.train import GRURouter

    weights = seeded_weights(3, seed=5)
    back = GRURouter.from_weights(weights).to_weights()
    for name in weights.ARRAYS:
        assert np.array_equal(getattr(weights, name), getattr(back, name))
    store = RouterStore(tmp_path)
    path = store.save("math", NAMES, weights, RouterInfo(trained_queries=2, epochs=3, last_loss=0.5, source="ttt"))
    assert path.suffix == ".npz" and not list(tmp_path.glob("*.tmp"))
    loaded, info = store.load("math", NAMES)
    assert info.trained_queries == 2 and info.source == "ttt"
    assert all(np.array_equal(getattr(weights, n), getattr(loaded, n)) for n in weights.ARRAYS)


def test_an_old_pt_file_is_converted_once(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    import json

    from core.methods.dmoa.train import GRURouter

    router = GRURouter(3, seed=9)
    store = RouterStore(tmp_path)
    meta = {"names": NAMES, "domain": "math", "trained_queries": 4, "epochs": 3, "last_loss": 0.1, "source": "few-shot"}
    torch.save({"state": router.state_dict(), "meta": json.dumps(meta)}, store.legacy_path("math", NAMES))
    weights, info = store.load("math", NAMES)
    assert info.trained_queries == 4 and store.path("math", NAMES).is_file()
    assert np.allclose(weights.head_weight, router.head.weight.detach().numpy())


def test_a_file_for_another_team_or_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    store = RouterStore(tmp_path)
    store.save("math", ["A", "B"], seeded_weights(2), RouterInfo())
    store.path("math", NAMES).write_bytes(store.path("math", ["A", "B"]).read_bytes())
    with pytest.raises(RouterError, match="another team"):
        store.load("math", NAMES)
    store.path("math", NAMES).write_bytes(b"PK\x03\x04 not an npz")
    with pytest.raises(RouterError, match="cannot load router weights"):
        store.load("math", NAMES)


def test_a_dmoa_run_that_does_not_train_imports_no_torch(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from tui.entry import main\n"
        f"code = main(['--demo', '--headless', '--strategy', 'dmoa', '-o', 'weights_dir={tmp_path}'])\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', code)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
                         timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "NO-TORCH 0", out.stderr[-2000:]
