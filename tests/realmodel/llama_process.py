"""llama-server as a child process on a free loopback port, and a proxy in front of it that shows its caller
every chat reply. The real-model tier (tests/realmodel/conftest.py) records usage through it and
bench/prefix_cache.py llama.cpp's timings; the bench loads this file by its path, so a ``--baseline`` run on an
older checkout, whose tests/ lack it, uses it too. Standard library only, for the same reason."""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from email.message import Message
from pathlib import Path
from typing import Any

HEALTH_WAIT_S = 60.0

# What a caller sees of one chat request: its headers, its body, the server's status and reply.
ChatSeen = Callable[[Message, bytes, int, bytes], None]


def reply_field(payload: bytes, name: str) -> dict[str, Any]:
    """A reply's ``usage`` or llama.cpp ``timings`` object: from the JSON body, or the last chunk of a stream
    that has it; empty when none does."""
    text = payload.decode("utf-8", "replace")
    found: dict[str, Any] = {}
    for chunk in [line[5:].strip() for line in text.splitlines() if line.startswith("data:")] or [text]:
        try:
            value = json.loads(chunk).get(name)
        except (ValueError, AttributeError):
            continue
        if isinstance(value, dict):
            found = value
    return found


class ServerFailed(RuntimeError):
    """llama-server exited or did not become healthy."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def llama_server(binary: Path, model: Path, *, ctx_size: int, parallel: int | None,
                 extra: Sequence[str] = ()) -> Iterator[int]:
    """A fresh llama-server (2 threads) that answers /health; yields its port and stops it on exit. ``parallel``
    None: no ``--parallel``, as a user starts it (llama.cpp then serves 4 slots over one unified KV cache)."""
    port = free_port()
    slots = ["--parallel", str(parallel)] if parallel is not None else []
    process = subprocess.Popen(
        [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-t", "2", "-c", str(ctx_size),
         *slots, *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + HEALTH_WAIT_S
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            if process.poll() is not None:
                raise ServerFailed(f"llama-server exited with code {process.returncode}")
            if time.monotonic() > deadline:
                raise ServerFailed(f"llama-server did not become healthy within {HEALTH_WAIT_S:.0f} s")
            time.sleep(0.3)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


class Proxy(http.server.ThreadingHTTPServer):
    """Forwards every request to the server; ``on_chat`` sees each chat request's reply before the client does.
    ``in_flight`` counts chat requests forwarded and not yet seen: a client that hung up (a cancelled call, a
    time budget) leaves the server finishing its call, and ``on_chat`` sees it then."""

    daemon_threads = True

    def __init__(self, upstream_port: int, on_chat: ChatSeen, *, hide_props: bool = False,
                 timeout_s: float = 600.0) -> None:
        self.upstream_port = upstream_port
        self.on_chat = on_chat
        self.hide_props = hide_props  # answer GET /props with 404, as a server that does not report its context
        self.timeout_s = timeout_s
        self.in_flight = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", free_port()), _Forward)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def settled(self, timeout_s: float = 300.0) -> None:
        """Wait until no chat request is in flight (every reply the server gave has been seen)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if self.in_flight == 0:
                    return
            time.sleep(0.1)
        raise AssertionError(f"a chat request to llama-server is still in flight after {timeout_s:.0f} s")

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client hung up (a cancelled call, a time budget): nothing to report

    @contextlib.contextmanager
    def serving(self) -> Iterator[Proxy]:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        try:
            yield self
        finally:
            self.shutdown()


class _Forward(http.server.BaseHTTPRequestHandler):
    server: Proxy

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._forward(None)

    def do_POST(self) -> None:
        self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _forward(self, body: bytes | None) -> None:
        proxy = self.server
        if proxy.hide_props and self.path.rstrip("/").endswith("/props"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        chat = body is not None and self.path.endswith("/chat/completions")
        if chat:
            with proxy.lock:
                proxy.in_flight += 1
        try:
            conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=proxy.timeout_s)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
            conn.request(self.command, self.path, body=body, headers=headers)
            reply = conn.getresponse()
            payload = reply.read()
            conn.close()
            if chat:
                proxy.on_chat(self.headers, body or b"", reply.status, payload)
        finally:
            if chat:
                with proxy.lock:
                    proxy.in_flight -= 1
        self.send_response(reply.status)
        for key, value in reply.getheaders():
            if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


# --- replaying a run's requests ------------------------------------------------------------------------------
# (agent, messages, round) of each request a run sent, in order: what a replay sends again.
Request = tuple[str, list[dict[str, Any]], int]


def kept_reply(requests: Sequence[Request], i: int) -> dict[str, Any] | None:
    """The assistant turn the same agent's next request appends to request ``i`` (its kept reply), if any."""
    agent, messages, _ = requests[i]
    later = next((m for a, m, _ in requests[i + 1:] if a == agent), None)
    n = len(messages)
    if later is None or len(later) <= n or later[:n] != messages or later[n].get("role") != "assistant":
        return None
    return later[n]


def one_token(port: int, messages: list[dict[str, Any]], slot: int) -> dict[str, float]:
    """One request on ``slot`` (-1: the one the server picks) that generates a single token: llama.cpp's timings
    of it (cache_n: prompt tokens taken from the cache, prompt_n: prefilled, prompt_ms: the prefill's time)."""
    body = json.dumps({"messages": messages, "max_tokens": 1, "temperature": 0, "cache_prompt": True,
                       "id_slot": slot}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
    reply = conn.getresponse()
    payload = reply.read()
    conn.close()
    if reply.status != 200:
        raise ServerFailed(f"llama-server refused a replayed request ({reply.status}): {payload[:300]!r}")
    timings = reply_field(payload, "timings")
    return {k: float(timings.get(k, 0)) for k in ("cache_n", "prompt_n", "prompt_ms")}


def replay(port: int, requests: Sequence[Request], slots: int, *, per_agent: bool = False) -> list[dict[str, float]]:
    """Send a run's requests again one at a time, placed as the app places them (by the server, or with
    ``per_agent`` each agent on its own slot: core.runtime.config.SlotPlacement): each call's timings, with
    ``later`` 1.0 for a call after the agent's first and ``reply`` 1.0 for the calls below.

    A live run's slot ends a call holding the prompt and the reply the model generated; a replay generates one
    token, so the reply a later request appends would be prefilled as new text. Where the agent's next request
    appends the reply as its assistant turn, the request is sent again with that reply as an assistant prefill
    (llama-server continues a final assistant message), which leaves the slot as the generation would; those
    calls stand for the generation (``reply``), not for a prefill."""
    slot_of: dict[str, int] = {}
    calls: list[dict[str, float]] = []
    for i, (agent, messages, _) in enumerate(requests):
        later = agent in slot_of
        slot = slot_of.setdefault(agent, len(slot_of) % slots if per_agent else -1)  # -1: the server's choice
        calls.append({**one_token(port, messages, slot), "later": float(later), "reply": 0.0})
        kept = kept_reply(requests, i)
        if kept is not None:
            calls.append({**one_token(port, [*messages, kept], slot), "later": 0.0, "reply": 1.0})
    return calls


def cached_share(calls: Sequence[dict[str, float]]) -> float:
    """Of the prompt tokens of every call after an agent's first, the share the server took from its cache."""
    later = [c for c in calls if c["later"]]
    cached = sum(c["cache_n"] for c in later)
    total = cached + sum(c["prompt_n"] for c in later)
    return cached / total if total else 0.0
