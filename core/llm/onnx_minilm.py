"""MiniLM through ONNX Runtime: the same vectors as sentence-transformers, in less time.

The model is exported once from a local sentence-transformers folder (the bundled package or a
configured path) with torch's exporter, by ``swarm-tui setup`` (the README's install command runs it),
into the installation's data folder (``<prefix>/share/swarm-tui/minilm-onnx``: every user and every fresh
home of that install finds it), or the user cache where that folder is not writable. Runs then use
onnxruntime with the folder's own fast tokenizer and never import torch. A missing or damaged file is
rebuilt with a progress line (``on_progress``), never a silent pause. Pooling follows the folder's
pipeline (modules.json): mean over each text's tokens, then L2 normalisation. Vectors match the torch
backend to about 1e-7 (tests/core/llm/test_embeddings_onnx.py checks 1e-5 on the conformance pairs).

Texts are *packed*: several short texts share one row of the model's input, each attending only to its
own tokens (a block-diagonal attention mask) with its positions counted from 0, so a text's vector is
what it would be alone, and the model computes no padding. Descriptors are 10-30 tokens; padding them to
a batch's longest cost about a sixth of the work, and the linear layers that dominate run near the CPU's
arithmetic peak already (bench/routing.py prints that floor), so fewer tokens is what makes it faster.

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
# The exported graph's inputs, each (rows, tokens): token ids, each token's position within its own text,
# and which text it belongs to (padding: -1). Changing them changes EXPORT_FORMAT, so old files are rebuilt.
_INPUTS = ("input_ids", "position_ids", "segment_ids")
EXPORT_FORMAT = "packed1"


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
    """Export the packed transformer (token embeddings out, see the module's note) to ONNX, atomically."""
    try:
        import torch
        from transformers import AutoModel
    except Exception as exc:
        raise OnnxUnavailable(f"cannot export to ONNX: {type(exc).__name__}: {exc}") from None

    class PackedTokenEmbeddings(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, position_ids: Any, segment_ids: Any) -> Any:
            hidden = self.model.embeddings(input_ids=input_ids, token_type_ids=torch.zeros_like(input_ids),
                                           position_ids=position_ids)
            # A token attends to the tokens of its own text only: an additive mask, 0 or the most negative
            # float, so the other texts' weights are exactly 0 after the softmax.
            same_text = segment_ids.unsqueeze(2) == segment_ids.unsqueeze(1)
            mask = torch.where(same_text, 0.0, torch.finfo(hidden.dtype).min).to(hidden.dtype).unsqueeze(1)
            return self.model.encoder(hidden, attention_mask=mask).last_hidden_state

    # Eager attention adds the mask as given (no fused kernel that would rebuild it from a 2-D mask).
    model = AutoModel.from_pretrained(str(folder), local_files_only=True, attn_implementation="eager").eval()
    ids = torch.ones((2, 8), dtype=torch.long)
    sample = (ids, torch.arange(8).repeat(2, 1), torch.tensor([[0] * 4 + [1] * 4, [2] * 6 + [-1] * 2]))
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".onnx.tmp", delete=False) as handle:
        scratch = Path(handle.name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                PackedTokenEmbeddings(model),
                sample,
                str(scratch),
                input_names=list(_INPUTS),
                output_names=["token_embeddings"],
                dynamic_axes={name: {0: "rows", 1: "tokens"} for name in (*_INPUTS, "token_embeddings")},
                opset_version=17,
                dynamo=False,
            )
        _publish(scratch, target)
    except Exception as exc:
        scratch.unlink(missing_ok=True)
        raise OnnxUnavailable(f"ONNX export failed: {type(exc).__name__}: {str(exc)[:160]}") from None


def _publish(scratch: Path, target: Path) -> None:
    """Move a finished file into place, readable by every user of the installation (a temporary file is
    created 0600), and remove the same model's files of an older export format beside it."""
    scratch.chmod(0o644)
    os.replace(scratch, target)
    fingerprint = target.name.split("-", 1)[0]  # export_name(): FINGERPRINT-FORMAT[.int8].onnx
    for old in target.parent.glob(f"{fingerprint}*.onnx"):
        if not old.name.startswith(f"{fingerprint}-{EXPORT_FORMAT}"):
            with contextlib.suppress(OSError):
                old.unlink()


def export_name(folder: Path, int8: bool = False) -> str:
    """The exported file's name: it changes when the model's weights do."""
    return f"{_fingerprint(folder)}-{EXPORT_FORMAT}{'.int8' if int8 else ''}.onnx"


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
            # Per-channel weights; activations get one scale per tensor per call, so an int8 vector moves a
            # little with the texts it is packed with. Keeping a layer in fp32 cost most of the speed-up for a
            # small gain in agreement (bench/routing.py prints it): all MatMuls are quantised.
            quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8, per_channel=True)
        _publish(partial, target)
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
        self.tokenizer.no_padding()  # encode() packs the texts into rows itself
        self.dimension = int(json.loads((folder / "config.json").read_text()).get("hidden_size", 384))

    def get_embedding_dimension(self) -> int:
        return self.dimension

    def encode(self, texts: list[str], *, batch_size: int = 32, normalize_embeddings: bool = True,
               **_: Any) -> np.ndarray:
        """Mean-pooled, L2-normalised rows, as the sentence-transformers pipeline of all-MiniLM-L6-v2.

        The texts are tokenised once and packed into rows (pack_rows); one model call takes up to
        ``batch_size`` rows, each padded only to the longest row of its call."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encodings]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        rows = pack_rows(lengths, max(ROW_TOKENS, max(lengths)))
        for first in range(0, len(rows), max(1, batch_size)):
            call = rows[first : first + max(1, batch_size)]
            width = max(sum(lengths[i] for i in row) for row in call)
            ids = np.zeros((len(call), width), dtype=np.int64)
            positions = np.zeros((len(call), width), dtype=np.int64)
            segments = np.full((len(call), width), -1, dtype=np.int64)  # padding: a text of its own
            spans: list[tuple[int, int, int, int]] = []  # (text, row, start, end)
            for r, row in enumerate(call):
                start = 0
                for i in row:
                    end = start + lengths[i]
                    ids[r, start:end] = encodings[i].ids
                    positions[r, start:end] = np.arange(lengths[i])
                    segments[r, start:end] = i
                    spans.append((i, r, start, end))
                    start = end
            tokens = self.session.run(None, {"input_ids": ids, "position_ids": positions, "segment_ids": segments})[0]
            for i, r, start, end in spans:
                out[i] = tokens[r, start:end].mean(axis=0)
        if normalize_embeddings:
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out


# Tokens per packed row. Attention inside a row costs (row length)^2 whatever the texts, so rows are kept
# short; 128 measured best for 8-16 descriptors of 13-27 tokens (bench/routing.py), and a longer text
# (up to the model's 256) gets a row of its own.
ROW_TOKENS = 128


def pack_rows(lengths: list[int], row_tokens: int = ROW_TOKENS) -> list[list[int]]:
    """Text indices packed into as few rows of at most ``row_tokens`` tokens as balancing allows.

    Longest text first into the emptiest row (LPT scheduling), starting from the fewest rows the total
    could fit in and adding a row while one overflows: rows of near-equal length pad least when a call
    pads them to its longest. Every text goes in exactly one row; a text longer than row_tokens is an error."""
    if not lengths:
        return []
    if max(lengths) > row_tokens:
        raise ValueError(f"a text of {max(lengths)} tokens does not fit a row of {row_tokens}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    count = -(-sum(lengths) // row_tokens)
    while True:
        rows: list[list[int]] = [[] for _ in range(count)]
        fill = [0] * count
        for i in order:
            emptiest = min(range(count), key=fill.__getitem__)
            rows[emptiest].append(i)
            fill[emptiest] += lengths[i]
        if max(fill) <= row_tokens:
            return [row for row in rows if row]
        count += 1


def _max_length(folder: Path) -> int:
    try:
        return int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError):
        return 256
