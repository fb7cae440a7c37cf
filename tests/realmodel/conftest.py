"""The real-model tier's server: llama-server with SmolLM2-135M-Instruct on a free loopback port, behind a
small recording proxy (every request body, every usage count the server reported). Without the build the tier
skips on a developer's machine, and fails in CI (CI=true), where .ci/run sets it up first."""

from __future__ import annotations

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

from tests.realmodel.setup_llama import CACHE, MODEL_MEMBER

SERVER = CACHE / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp" / "build" / "bin" / "llama-server"
MODEL = CACHE / "model" / MODEL_MEMBER


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Recorded:
    bodies: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class RealModel:
    base_url: str  # the proxy's
    recorded: Recorded


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


def _proxy(upstream_port: int, recorded: Recorded) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _forward(self, body: bytes | None) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=300)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
            conn.request(self.command, self.path, body=body, headers=headers)
            reply = conn.getresponse()
            payload = reply.read()
            if body and self.path.endswith("/chat/completions") and reply.status == 200:
                prompt, completion = _usage_of(payload)
                with recorded.lock:
                    recorded.bodies.append(json.loads(body))
                    recorded.prompt_tokens += prompt
                    recorded.completion_tokens += completion
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

    return http.server.ThreadingHTTPServer(("127.0.0.1", _free_port()), Handler)


@pytest.fixture(scope="session")
def real_model() -> Iterator[RealModel]:
    if not SERVER.is_file() or not MODEL.is_file():
        message = "llama-server or the model is missing: python -m tests.realmodel.setup_llama builds them"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    port = _free_port()
    process = subprocess.Popen(
        [str(SERVER), "-m", str(MODEL), "--host", "127.0.0.1", "--port", str(port), "-t", "2", "-c", "4096",
         "--parallel", "2"],
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
        proxy = _proxy(port, recorded)
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        yield RealModel(f"http://127.0.0.1:{proxy.server_address[1]}/v1", recorded)
        proxy.shutdown()
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
