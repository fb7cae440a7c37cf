"""Engine events into Textual messages: the only way the engine reaches the UI (DESIGN rules 2, 4).

The sink runs wherever the engine emits (the app's loop); it only posts a message. Handlers on the
app/screens own every piece of UI state.
"""

from __future__ import annotations

from textual.app import App
from textual.message import Message

from core.runtime import events as ev


class EngineEvent(Message):
    """One core event, on its way to the screen that shows the run."""

    def __init__(self, event: ev.Event) -> None:
        super().__init__()
        self.event = event


class EventBridge:
    """An engine sink: ``bridge(event)`` posts ``EngineEvent(event)`` to the app."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.posted = 0

    def __call__(self, event: ev.Event) -> None:
        self.posted += 1
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
