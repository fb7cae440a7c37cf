"""Engine events into Textual messages: the only way the engine reaches the UI (docs/architecture.md, rules 2 and 5).

The sink runs wherever the engine emits (the app's loop); it only posts a message. Handlers on the
app/screens own every piece of UI state.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from textual.app import App
from textual.message import Message

from core.runtime import events as ev
from core.runtime.dispatch import is_delta


class EngineEvent(Message):
    """One core event, on its way to the screen that shows the run."""

    def __init__(self, event: ev.Event) -> None:
        super().__init__()
        self.event = event


class EventBridge:
    """An engine sink: ``bridge(event)`` posts ``EngineEvent(event)`` to the app.

    Streamed text is coalesced: an agent's deltas within ``DELTA_FLUSH_S`` travel as one message. With
    16 agents streaming 100 chunks a second, one message per chunk kept the event loop busy with
    message dispatch (bench/tui_stream.py --agents 16); the panes show text 25 times a second anyway.
    Every other event first sends the deltas held before it, so the order of each agent's events holds.
    """

    DELTA_FLUSH_S = 0.02

    def __init__(self, app: App) -> None:
        self.app = app
        self._deltas: dict[tuple[int, str, str], ev.AgentDelta] = {}
        self._flush_at: asyncio.TimerHandle | None = None

    def __call__(self, event: ev.Event) -> None:
        if is_delta(event):
            self._hold(event)
            return
        self.flush()
        self._post(event)

    def _hold(self, delta: ev.AgentDelta) -> None:
        key = (delta.round, delta.agent, delta.call)
        held = self._deltas.get(key)
        self._deltas[key] = delta if held is None else replace(held, text=held.text + delta.text)
        if self._flush_at is None:
            try:
                self._flush_at = asyncio.get_running_loop().call_later(self.DELTA_FLUSH_S, self.flush)
            except RuntimeError:  # no loop here (a caller outside the app's loop): send at once
                self.flush()

    def flush(self) -> None:
        """Send the deltas held so far, one message per agent and call."""
        if self._flush_at is not None:
            self._flush_at.cancel()
            self._flush_at = None
        held, self._deltas = self._deltas, {}
        for delta in held.values():
            self._post(delta)

    def _post(self, event: ev.Event) -> None:
        self.app.post_message(EngineEvent(event))


class EmbedderReady(Message):
    """MiniLM finished loading in the background (or failed: error is set)."""

    def __init__(self, error: str = "") -> None:
        super().__init__()
        self.error = error


class BackendFailed(Message):
    """Opening the endpoint failed; message is one line for the user."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class BackendStatus(Message):
    """Opening the endpoint is taking a while: "contacting URL … N s" (one line for the header)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
