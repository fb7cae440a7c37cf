"""What the app loads beside its first frames: the model client (the openai SDK, ~0.8 s to import) and MiniLM,
each in a daemon thread, so neither the first frame nor a run opening its endpoint waits for them.

Daemon threads, not Textual workers: those run in the loop's executor, which asyncio joins on exit, so quitting
waited seconds for torch to finish importing. The threads touch no widget; MiniLM's end is posted to the app as
an EmbedderReady message.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

from .bridge import EmbedderReady

EMBEDDER_THREAD = "swarm-tui-embedder"
CLIENT_THREAD = "swarm-tui-client"  # imports the openai SDK while the first frames draw


def settle_heap() -> None:
    """Take every object alive now (modules, the openai SDK's types, the model, the screen) out of the cyclic
    garbage collector's walks. Its full collections otherwise went over all of them again and again:
    pauses of 100–200 ms every second or two while 16 agents streamed (bench/tui_stream.py --agents 16)."""
    gc.freeze()


class BackgroundLoads:
    """The app's two background loads. ``embedder``: whether MiniLM is wanted at all (a replay, a benchmark or a
    saved comparison route nothing live; a fork from them asks for it later with ``want_embedder``)."""

    def __init__(self, app: Any, *, embedder: bool) -> None:
        self.app = app  # a tui.app.SwarmApp: its settings name the embedder, it hears EmbedderReady
        self.embedder_wanted = embedder
        self.embedder_thread: threading.Thread | None = None
        self.client_thread: threading.Thread | None = None
        self._embedder_started = False
        self._client_loaded = threading.Event()

    # --- the model client -----------------------------------------------------------------------
    def preload_client(self) -> None:
        """Import the model client in a daemon thread (once)."""
        if self._client_loaded.is_set() or self.client_thread is not None:
            return

        def load() -> None:
            try:
                import core.llm.client  # noqa: F401
            finally:
                settle_heap()
                self._client_loaded.set()

        self.client_thread = threading.Thread(target=load, name=CLIENT_THREAD, daemon=True)
        self.client_thread.start()

    async def client_loaded(self) -> None:
        """Wait, without blocking the screen, until the model client is imported (at once if it is)."""
        self.preload_client()
        while not self._client_loaded.is_set():
            await asyncio.sleep(0.02)

    # --- MiniLM -----------------------------------------------------------------------------------
    def want_embedder(self) -> bool:
        """A fork from a replay routes live: MiniLM is wanted after all. True when it was not before."""
        newly = not self.embedder_wanted
        self.embedder_wanted = True
        return newly

    def warm_up_embedder(self) -> None:
        """Start loading MiniLM (once, if wanted). A run calls this when its first model call is answering, so
        the first request never waits for torch (the load overlaps the model's reply)."""
        if self.embedder_wanted and not self._embedder_started:
            self._embedder_started = True
            self.embedder_thread = threading.Thread(target=self._load_embedder, name=EMBEDDER_THREAD, daemon=True)
            self.embedder_thread.start()

    def _load_embedder(self) -> None:
        """Thread: load MiniLM so the first routing does not wait; touches no widget, only posts."""
        from core.compose.plan import embedder_for

        app = self.app
        embedder = embedder_for(app.settings)
        # A one-time ONNX export (its file missing or damaged) is shown, not written over the screen.
        embedder.on_progress = lambda text: app.call_from_thread(app.notify, text, timeout=15)
        try:
            embedder.load()
        except Exception as exc:  # EmbeddingError, or anything torch raises: one line for the user
            app.post_message(EmbedderReady(str(exc) or type(exc).__name__))
        else:
            settle_heap()
            app.post_message(EmbedderReady())
