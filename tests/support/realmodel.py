"""The real-model tier's handle: the proxy's address and what it recorded."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

from tests.realmodel.llama_process import Proxy, reply_field


@dataclass
class Recorded:
    bodies: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # the bodies of chat requests the server refused (4xx)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # llama.cpp's timings.cache_n: the prompt tokens it took from a slot's cache
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seen(self, headers: Message, body: bytes, status: int, payload: bytes) -> None:
        """One chat reply, as the proxy passes it on: a served request's body and counts, or a refusal."""
        with self.lock:
            if status == 200:
                usage = reply_field(payload, "usage")
                self.bodies.append(json.loads(body or b"{}"))
                self.prompt_tokens += int(usage.get("prompt_tokens", 0))
                self.completion_tokens += int(usage.get("completion_tokens", 0))
                self.cached_tokens += int(reply_field(payload, "timings").get("cache_n", 0))
            elif 400 <= status < 500:
                self.refusals.append(payload.decode("utf-8", "replace"))


@dataclass
class RealModel:
    base_url: str  # the proxy's
    recorded: Recorded
    proxy: Proxy

    def settled(self) -> None:
        """Wait for the chat requests in flight: an earlier run that hung up on a call (its time budget) leaves
        the server finishing it, and the proxy records its tokens when it does. A test that compares counts
        starts after that."""
        self.proxy.settled()
