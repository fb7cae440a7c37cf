"""MiniLM through ONNX Runtime: the same vectors as sentence-transformers, in less time.

The model is exported once from a local sentence-transformers folder (the bundled package or a
configured path) with torch's exporter, by ``swarm-tui setup`` (the README's install command runs it),
into the installation's data folder (``<prefix>/share/swarm-tui/minilm-onnx``: every user and every fresh
home of that install finds it), or the user cache where that folder is not writable. Runs then use
onnxruntime with the folder's own fast tokenizer and never import torch. A missing or damaged file is
rebuilt with a progress line (``on_progress``), never a silent pause. Pooling follows the folder's
pipeline (modules.json): mean over the attention mask, then L2 normalisation. Vectors match the torch
backend to about 1e-7 (tests/test_embeddings_onnx.py checks 1e-5 on the conformance pairs).

Nothing here downloads anything. Any failure (onnxruntime missing, an export that does not work with
the installed torch/transformers, an unreadable cache) raises OnnxUnavailable and the caller falls back
to torch; ``SWARM_TUI_EMBEDDING_BACKEND=torch`` skips this backend.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import platformdirs

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)

ENV_BACKEND = "SWARM_TUI_EMBEDDING_BACKEND"  # "torch" turns ONNX Runtime off
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class OnnxUnavailable(RuntimeError):
    """This backend cannot run here; the message says why (the caller uses torch instead)."""


def onnx_wanted() -> bool:
    return os.environ.get(ENV_BACKEND, "").strip().lower() != "torch"


def _fingerprint(folder: Path) -> str:
    """Which weights an exported file came from: the weight files' names, sizes and times."""
    parts = []
    for name in ("model.safetensors", "pytorch_model.bin", "config.json"):
        path = folder / name
        if path.is_file():
            stat = path.stat()
            parts.append(f"{name}:{stat.st_size}:{int(stat.st_mtime)}")
    if not parts:
        raise OnnxUnavailable(f"{folder} has no model weights to export")
    return hashlib.sha256("|".join([str(folder.resolve()), *parts]).encode()).hexdigest()[:16]


def _export(folder: Path, target: Path) -> None:
    """Export the transformer (token embeddings out) to ONNX with torch, atomically."""
    try:
        import torch
        from transformers import AutoModel
    except Exception as exc:
        raise OnnxUnavailable(f"cannot export to ONNX: {type(exc).__name__}: {exc}") from None

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
    sample = torch.ones((2, 8), dtype=torch.long)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".onnx.tmp", delete=False) as handle:
        scratch = Path(handle.name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                TokenEmbeddings(model),
                (sample, sample, torch.zeros_like(sample)),
                str(scratch),
                input_names=list(_INPUTS),
                output_names=["token_embeddings"],
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "token_embeddings")},
                opset_version=17,
                dynamo=False,
            )
        os.replace(scratch, target)
    except Exception as exc:
        scratch.unlink(missing_ok=True)
        raise OnnxUnavailable(f"ONNX export failed: {type(exc).__name__}: {str(exc)[:160]}") from None


def export_name(folder: Path, int8: bool = False) -> str:
    """The exported file's name: it changes when the model's weights do."""
    return f"{_fingerprint(folder)}{'.int8' if int8 else ''}.onnx"


def onnx_dirs() -> list[Path]:
    """Where an exported file is looked for, in order: the installation's data folder, the user cache."""
    return [Path(sys.prefix) / "share" / "swarm-tui" / "minilm-onnx",
            Path(platformdirs.user_cache_dir("swarm-tui")) / "minilm-onnx"]


def writable_dir(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def exported_model(folder: str | Path, dirs: list[Path] | None = None,
                   on_progress: Callable[[str], None] | None = None, *, int8: bool = False) -> Path:
    """The exported ONNX file for this model folder: found in ``dirs`` (default onnx_dirs()), else exported
    now into the first writable one, saying so through ``on_progress``. OnnxUnavailable if it cannot be.
    ``int8``: the dynamically quantised copy (int8 weights), made from the fp32 export."""
    folder = Path(folder)
    name = export_name(folder, int8)
    dirs = dirs or onnx_dirs()
    for where in dirs:
        if (where / name).is_file():
            return where / name
    target = next((where for where in dirs if writable_dir(where)), None)
    if target is None:
        raise OnnxUnavailable(f"no writable folder for the ONNX export (tried {', '.join(map(str, dirs))})")
    if int8:
        source = exported_model(folder, dirs, on_progress)
        if on_progress is not None:
            on_progress(f"quantising MiniLM to int8 into {target} (one time, a few seconds)")
        _quantize(source, target / name)
        return target / name
    if on_progress is not None:
        on_progress(f"preparing MiniLM for ONNX Runtime: a one-time export into {target} (about 10 s; "
                    "`swarm-tui setup` does it at install)")
    _export(folder, target / name)
    return target / name


def _quantize(source: Path, target: Path) -> None:
    """Dynamic int8 quantisation of the fp32 export (weights int8, activations quantised per call), atomically."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except Exception as exc:
        raise OnnxUnavailable(f"cannot quantise to int8: {type(exc).__name__}: {exc}") from None
    partial = target.with_name(target.name + ".tmp")
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
            warnings.simplefilter("ignore")
            logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process is for vision models
            # Per-channel weights kept the routed graph of 55 of 56 recorded rounds (per-tensor: 46); bench/routing.py
            quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8, per_channel=True)
        partial.replace(target)
    except Exception as exc:
        partial.unlink(missing_ok=True)
        raise OnnxUnavailable(f"int8 quantisation failed: {type(exc).__name__}: {str(exc)[:160]}") from None


class OnnxMiniLM:
    """The slice of SentenceTransformer's interface the Embedder uses: encode() and the dimension."""

    def __init__(self, folder: str | Path, cache_dir: Path | None = None,
                 on_progress: Callable[[str], None] | None = None, *, int8: bool = False) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except Exception as exc:
            raise OnnxUnavailable(f"onnxruntime is not installed ({type(exc).__name__})") from None
        folder = Path(folder)
        tokenizer_file = folder / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise OnnxUnavailable(f"{folder} has no tokenizer.json")
        dirs = [cache_dir] if cache_dir is not None else None
        self.path = exported_model(folder, dirs, on_progress, int8=int8)
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: nothing may scribble over the TUI
        # No spin-waiting between ops: on a CPU shared with a model server and the TUI it only burns time
        # (the same reason the torch backend sets OMP_WAIT_POLICY=PASSIVE).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        except Exception:  # a damaged file: export it again, once, and say so
            damaged = self.path
            with contextlib.suppress(OSError):
                damaged.unlink()
            if on_progress is not None:
                on_progress(f"the ONNX copy of MiniLM at {damaged} is damaged: rebuilding it")
            self.path = exported_model(folder, dirs, on_progress, int8=int8)
            try:
                self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
            except Exception as exc:
                raise OnnxUnavailable(f"cannot load {self.path}: {str(exc)[:160]}") from None
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.enable_truncation(max_length=_max_length(folder))
        self.tokenizer.no_padding()  # encode() pads each length bucket itself, to that bucket's longest text
        self.pad_id = self.tokenizer.token_to_id("[PAD]") or 0
        self.dimension = int(json.loads((folder / "config.json").read_text()).get("hidden_size", 384))

    def get_embedding_dimension(self) -> int:
        return self.dimension

    def encode(self, texts: list[str], *, batch_size: int = 32, normalize_embeddings: bool = True,
               **_: Any) -> np.ndarray:
        """Mean-pooled, L2-normalised rows, as the sentence-transformers pipeline of all-MiniLM-L6-v2.

        The texts are tokenised once, then run in buckets of similar length (length_buckets), each padded
        only to its own longest text: the model's cost is proportional to the padded tokens it is fed."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for bucket in length_buckets([len(e.ids) for e in encodings], batch_size):
            width = max(len(encodings[i].ids) for i in bucket)
            ids = np.full((len(bucket), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(bucket), width), dtype=np.int64)
            for row, i in enumerate(bucket):
                ids[row, : len(encodings[i].ids)] = encodings[i].ids
                mask[row, : len(encodings[i].ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            tokens = self.session.run(None, feed)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            if normalize_embeddings:
                pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[bucket] = pooled
        return out


# One model call costs about as much as this many more padded tokens (fitted on 2 cores: ~2 ms a call,
# ~0.1 ms a token), so a bucket is split off only when it saves more padding than that.
CALL_COST_TOKENS = 20


def length_buckets(lengths: list[int], batch_size: int = 32) -> list[list[int]]:
    """Indices grouped into batches of similar token length, minimising padded tokens + calls.

    Sorted by length, the best split into contiguous runs is a small dynamic programme: cost of a run =
    its size x its longest length (what the model computes) + CALL_COST_TOKENS. At most batch_size each."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[j]: cheapest cost of the first j sorted texts
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(max(0, j - batch_size), j):
            cost = best[i] + (j - i) * lengths[order[j - 1]] + CALL_COST_TOKENS
            if cost < best[j]:
                best[j], cut[j] = cost, i
    buckets: list[list[int]] = []
    j = n
    while j > 0:
        buckets.append(order[cut[j] : j])
        j = cut[j]
    return buckets[::-1]


def _max_length(folder: Path) -> int:
    try:
        return int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError):
        return 256
