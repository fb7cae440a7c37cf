"""The real-model tier's server: llama-server with SmolLM2-135M-Instruct on a free loopback port, behind a
small recording proxy (every request body, every usage count the server reported). Without the build the tier
skips on a developer's machine, and fails in CI (CI=true), where .ci/run sets it up first."""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.realmodel.setup_llama import CACHE, MODEL_MEMBER, SERVER

MODEL = CACHE / "model" / MODEL_MEMBER


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Recorded:
    bodies: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # the bodies of chat requests the server refused (4xx)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # llama.cpp's timings.cache_n: the prompt tokens it took from a slot's cache
    in_flight: int = 0  # chat requests forwarded and not yet answered
    lock: threading.Lock = field(default_factory=threading.Lock)

    def settled(self, timeout: float = 300.0) -> None:
        """Wait until no chat request is in flight. A run that hung up on a call (its time budget) leaves the
        server finishing it, and the proxy counts its tokens when it does: a later test's counts must start
        after that."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.in_flight == 0:
                    return
            time.sleep(0.1)
        raise AssertionError("a chat request to llama-server is still in flight after 300 s")


@dataclass
class RealModel:
    base_url: str  # the proxy's
    recorded: Recorded


def _cached_of(payload: bytes) -> int:
    """llama.cpp's timings.cache_n of a reply (the JSON body or the stream's chunk that has them)."""
    text = payload.decode("utf-8", "replace")
    cached = 0
    for chunk in [line[5:].strip() for line in text.splitlines() if line.startswith("data:")] or [text]:
        try:
            timings = json.loads(chunk).get("timings") or {}
        except (ValueError, AttributeError):
            continue
        cached = timings.get("cache_n", cached)
    return int(cached)


def _usage_of(payload: bytes) -> tuple[int, int]:
    """The usage the server reported in a reply (a JSON body or the SSE stream's usage chunk)."""
    text = payload.decode("utf-8", "replace")
    chunks = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")] or [text]
    prompt = completion = 0
    for chunk in chunks:
        try:
            usage = json.loads(chunk).get("usage") or {}
        except (ValueError, AttributeError):
            continue
        prompt, completion = usage.get("prompt_tokens", prompt), usage.get("completion_tokens", completion)
    return prompt, completion


def _proxy(upstream_port: int, recorded: Recorded, *, hide_props: bool = False) -> http.server.ThreadingHTTPServer:
    """``hide_props``: answer GET /props with 404, as a server that does not report its context does."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _forward(self, body: bytes | None) -> None:
            if hide_props and self.path.rstrip("/").endswith("/props"):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            chat = bool(body) and self.path.endswith("/chat/completions")
            if chat:
                with recorded.lock:
                    recorded.in_flight += 1
            try:
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=300)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                conn.request(self.command, self.path, body=body, headers=headers)
                reply = conn.getresponse()
                payload = reply.read()
                if chat and reply.status == 200:
                    prompt, completion = _usage_of(payload)
                    with recorded.lock:
                        recorded.bodies.append(json.loads(body or b"{}"))
                        recorded.prompt_tokens += prompt
                        recorded.completion_tokens += completion
                        recorded.cached_tokens += _cached_of(payload)
                elif chat and 400 <= reply.status < 500:
                    with recorded.lock:
                        recorded.refusals.append(payload.decode("utf-8", "replace"))
            finally:
                if chat:
                    with recorded.lock:
                        recorded.in_flight -= 1
            self.send_response(reply.status)
            for key, value in reply.getheaders():
                if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            conn.close()

        def do_GET(self) -> None:
            self._forward(None)

        def do_POST(self) -> None:
            self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    class Quiet(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # the app hung up (a cancelled call, a time budget): nothing to report

    return Quiet(("127.0.0.1", _free_port()), Handler)


@contextlib.contextmanager
def _serve(ctx_size: int, parallel: int, *, hide_props: bool = False) -> Iterator[RealModel]:
    if not SERVER.is_file() or not MODEL.is_file():
        message = "llama-server or the model is missing: python -m tests.realmodel.setup_llama builds them"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    port = _free_port()
    process = subprocess.Popen(
        [str(SERVER), "-m", str(MODEL), "--host", "127.0.0.1", "--port", str(port), "-t", "2", "-c", str(ctx_size),
         "--parallel", str(parallel)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            if process.poll() is not None:
                pytest.fail(f"llama-server exited with code {process.returncode}")
            time.sleep(0.3)
        else:
            pytest.fail("llama-server did not become healthy within 60 s")
        recorded = Recorded()
        proxy = _proxy(port, recorded, hide_props=hide_props)
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        yield RealModel(f"http://127.0.0.1:{proxy.server_address[1]}/v1", recorded)
        proxy.shutdown()
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="session")
def real_model() -> Iterator[RealModel]:
    with _serve(4096, 2) as model:
        yield model


@pytest.fixture()
def small_context_model() -> Iterator[RealModel]:
    """A context of 512 tokens a request (1024 over 2 slots; llama.cpp's least is 512) that the server does not
    report (/props hidden): prompts go over it, and the app learns its size from the server's refusal."""
    with _serve(1024, 2, hide_props=True) as model:
        yield model
