"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for tests and ``--demo``.

It speaks just enough of the OpenAI API for the real ``openai`` client: ``GET /v1/models`` and
``POST /v1/chat/completions`` (plain JSON or SSE streaming, with usage). Replies come from a *script*,
a function of the parsed request (who is calling, which call kind, which round; see core.runtime.prompts'
call header). Faults can be injected per role/call/round to exercise the engine's error paths.

It runs a stdlib ThreadingHTTPServer in a daemon thread, so it works while an asyncio loop (e.g. a
Textual app) owns the main thread. It never writes to stdout/stderr: that would corrupt a TUI.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from core.demo.behaviour import ServerBehaviour
from core.demo.faults import FaultRule
from core.demo.replies import ReplyWriter, error_body, send_fault
from core.llm.call_id import CALL_ID_HEADER
from core.runtime.events import CallKind
from core.runtime.scripted import RequestInfo, Script, estimate_tokens, parse_request, played_instead, text_of

DEFAULT_BEHAVIOUR = ServerBehaviour()
_GENERIC_REPLY = json.dumps({"reply": "Hello from the swarm-tui scripted server."})


# --- fault payloads -------------------------------------------------------------------------------


def _malformed(_: str) -> str:
    return (
        "I'm sorry, but I need to think about this problem a bit more before I can give a structured "
        "answer. The approach looks reasonable overall; let me come back to it in the next message."
    )


def _repairable(reply: str) -> str:
    """Break valid JSON the way small local models do; json-repair still recovers the object."""
    try:
        data = json.loads(reply)
    except ValueError:
        return reply[: max(1, len(reply) - 1)]
    if not isinstance(data, dict):
        return reply
    parts = [f"{k}: {json.dumps(v)}" for k, v in data.items()]  # unquoted keys
    return "{" + ", ".join(parts) + ","  # trailing comma, missing closing brace


def _fenced(reply: str) -> str:
    return f"Here is my reply:\n```json\n{reply}\n```\n"


def _think(reply: str) -> str:
    return (
        "<think>\nThe contract wants {public, private, query, key}. Let me draft it {carefully}.\n</think>\n"
        f"Sure! Here is the JSON you asked for:\n{reply}\nLet me know if you need anything else."
    )


def _missing_fields(reply: str, info: RequestInfo) -> str:
    try:
        data = json.loads(reply)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return json.dumps({"public": reply})
    drop = ("goal",) if info.call in (CallKind.MANAGER, CallKind.PLAN) or info.role == "Manager" else ("query", "key")
    for name in drop:
        data.pop(name, None)
    return json.dumps(data)



def overflow_body(style: str, prompt_tokens: int, max_tokens: int, n_ctx: int) -> bytes:
    """The 400 body a server sends for a request over its context, in its own words and shape."""
    if style == "llama.cpp":
        message = (f"request ({prompt_tokens} tokens) exceeds the available context size ({n_ctx} tokens), "
                   "try increasing it")
        return json.dumps({"error": {"code": 400, "message": message, "type": "exceed_context_size_error",
                                     "n_prompt_tokens": prompt_tokens, "n_ctx": n_ctx}}).encode()
    if style == "vllm":  # vLLM's error object sits at the top level, not under "error"
        message = (f"This model's maximum context length is {n_ctx} tokens. However, you requested "
                   f"{prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, {max_tokens} in the "
                   "completion). Please reduce the length of the messages or completion.")
        return json.dumps({"object": "error", "message": message, "type": "BadRequestError", "param": None,
                           "code": 400}).encode()
    if style == "ollama":
        return error_body("the input length exceeds the context length", "invalid_request_error", None)
    message = (f"This model's maximum context length is {n_ctx} tokens. However, your messages resulted in "
               f"{prompt_tokens} tokens. Please reduce the length of the messages.")
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                                 "code": "context_length_exceeded"}}).encode()


# --- the server ----------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() closes client sockets itself; never wait on a stalled handler
    # socketserver's backlog of 5 dropped connections when a large team opened more at once, and each
    # dropped one waited a second for its SYN to be sent again (bench/team_scale.py rounds of 1.25 s).
    request_queue_size = 128
    owner: ScriptedServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients vanish mid-stream on purpose (timeouts, cancel); never print tracebacks.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and chunked streaming so a drop is detectable
    server: _HTTPServer

    # -- plumbing --
    def setup(self) -> None:
        super().setup()
        # Small SSE writes must leave at once, not wait for Nagle's algorithm.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        self.server.owner._track(self.connection, False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # silent: stderr belongs to the app

    def _send_json(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _write_chunk(self, data: bytes) -> None:
        # One write per chunk (size line, data, CRLF): one TCP segment, flushed immediately.
        self.wfile.write(b"%x\r\n%b\r\n" % (len(data), data))

    def _reset(self) -> None:
        """Reset the connection (RST, not FIN): SO_LINGER with a zero timeout, then close."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()

    def _abort(self) -> None:
        """Close the connection abruptly, mid-body."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    # -- routes --
    def do_GET(self) -> None:
        owner = self.server.owner
        plays = owner.behaviour
        if self._path() == "/props" and ((plays.report_context and plays.context_size) or plays.slots):
            # llama.cpp's server properties: the context of one request slot, and how many slots there are
            n_ctx = plays.context_size if plays.report_context and plays.context_size else 4096
            data = {"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": plays.slots or 1}
            self._send_json(200, json.dumps(data).encode())
        elif self._path().endswith("/models"):
            data = {
                "object": "list",
                "data": [{"id": owner.behaviour.model, "object": "model", "owned_by": "swarm-tui"}],
            }
            self._send_json(200, json.dumps(data).encode())
        else:
            self._send_json(
                404, error_body(f"no route GET {self.path}", "invalid_request_error", "not_found")
            )

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self._path().endswith("/chat/completions"):
            self._send_json(
                404, error_body(f"no route POST {self.path}", "invalid_request_error", "not_found")
            )
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not an object")
        except ValueError as exc:
            self._send_json(400, error_body(f"invalid JSON body: {exc}", "invalid_request_error", None))
            return
        try:
            self.server.owner._serve_completion(self, body)
        except (ConnectionError, OSError):
            self.close_connection = True  # the client went away; nothing to answer


class ScriptedServer:
    """Scripted OpenAI-compatible server. Use as a context manager or call start()/stop()."""

    def __init__(self, script: Script | None = None, behaviour: ServerBehaviour = DEFAULT_BEHAVIOUR) -> None:
        """``script``: the replies (the demo's when None); ``behaviour``: pacing, what replies report, the
        context and how a request over it is refused (core.demo.behaviour)."""
        if script is None:
            from core.demo.scripts import demo_script  # lazy: only when no script is given

            script = demo_script
        self.script = script
        self.behaviour = behaviour
        self._cached_prompts: dict[str, str] = {}  # slot -> the last prompt it held (prefix_cache)
        self.requests: list[RequestInfo] = []
        self.overflowed: list[RequestInfo] = []  # the requests refused as over the context
        self._faults: list[FaultRule] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._writer = ReplyWriter(behaviour, self._stopping)
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    @property
    def model(self) -> str:
        """The one model the server lists."""
        return self.behaviour.model

    # -- lifecycle --
    def start(self) -> ScriptedServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        # A short poll interval keeps stop() prompt.
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wakes stalled / paced handlers
        httpd.shutdown()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:  # unblock handlers stuck in writes or keep-alive reads
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the scripted server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def plays_instead(self, problem: str, domain: str) -> str:
        """The problem the script plays when a run asks for ``problem`` ("" when it plays that one)."""
        return played_instead(self.script, problem, domain)

    # -- faults --
    def add_fault(self, rule: FaultRule) -> None:
        with self._lock:
            self._faults.append(rule)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault(self, info: RequestInfo) -> FaultRule | None:
        """The first matching rule, consuming one of its uses."""
        with self._lock:
            for rule in self._faults:
                if rule.matches(info):
                    if rule.times > 0:
                        rule.times -= 1
                        if rule.times == 0:
                            self._faults.remove(rule)
                    return rule
        return None

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    # -- serving (runs on a handler thread) --
    def _serve_completion(self, handler: _Handler, body: dict[str, Any]) -> None:
        info = parse_request(body, handler.headers.get(CALL_ID_HEADER))
        with self._lock:
            self.requests.append(info)
            self._counter += 1
            completion_id = f"chatcmpl-scripted-{self._counter}"
        if self._refuse_overflow(handler, info):
            return
        fault = self._take_fault(info)
        kind = fault.kind if fault else ""
        if send_fault(handler, fault, body):
            return
        content = self._scripted(handler, info)
        if content is None:
            return
        content = self._shape(kind, content, info)

        if self.behaviour.latency > 0 and self._stopping.wait(self.behaviour.latency):
            handler._abort()
            return
        prompt_tokens = estimate_tokens("".join(text_of(m.get("content")) for m in info.messages))
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": estimate_tokens(content),
            "total_tokens": prompt_tokens + estimate_tokens(content),
        }
        timings = self._play_cache(info, prompt_tokens, usage)
        top = self._top_logprobs(body)
        if body.get("stream"):
            stream_options = body.get("stream_options") or {}
            want_usage = (
                self.behaviour.usage and isinstance(stream_options, dict) and bool(stream_options.get("include_usage"))
            )
            interval = fault.interval if fault is not None else 0.0
            self._writer.stream(handler, completion_id, content, usage if want_usage else None, kind, top, interval,
                                timings)
        else:
            self._writer.whole(handler, completion_id, content, usage if self.behaviour.usage else None, kind, top,
                               timings)

    def _scripted(self, handler: _Handler, info: RequestInfo) -> str | None:
        """The script's reply to this request (a generic one without the call header); None when the script
        failed and a 500 went out instead."""
        if not info.has_header:
            content = _GENERIC_REPLY
        else:
            try:
                content = self.script(info)
            except Exception as exc:  # a broken script must show up as a server error, not a hang
                handler._send_json(500, error_body(f"script error: {exc!r}", "server_error", None))
                return None
        return content

    def _play_cache(self, info: RequestInfo, prompt_tokens: int, usage: dict[str, Any]) -> dict[str, Any] | None:
        """prefix_cache: the cached share of this prompt, put where the chosen server reports it (llama.cpp's
        timings are returned, to go beside the reply; OpenAI's details go into ``usage``)."""
        if self.behaviour.prefix_cache is None:
            return None
        prompt = "".join(f"<|{m.get('role')}|>{text_of(m.get('content'))}" for m in info.messages)
        slot = info.body.get("id_slot")
        key = f"slot {slot}" if isinstance(slot, int) else f"agent {info.role}"
        with self._lock:
            previous = self._cached_prompts.get(key, "")
            self._cached_prompts[key] = prompt
        shared = 0
        for a, b in zip(previous, prompt, strict=False):
            if a != b:
                break
            shared += 1
        cached = min(prompt_tokens, shared // 4)
        if self.behaviour.prefix_cache == "openai":
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
            return None
        return {"cache_n": cached, "prompt_n": prompt_tokens - cached, "prompt_ms": float(prompt_tokens - cached)}

    def _refuse_overflow(self, handler: _Handler, info: RequestInfo) -> bool:
        """Answer a request over the context as the chosen server would; False when it fits."""
        style, size = self.behaviour.overflow_style, self.behaviour.context_size
        if not size:
            return False
        prompt = estimate_tokens("".join(text_of(m.get("content")) for m in info.messages))
        max_tokens = info.body.get("max_tokens")
        max_tokens = max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) else 0
        needed = prompt + max_tokens if style == "vllm" else prompt
        if needed <= size:
            return False
        with self._lock:
            self.overflowed.append(info)
        handler._send_json(400, overflow_body(style, prompt, max_tokens, size))
        return True

    def _top_logprobs(self, body: dict[str, Any]) -> int:
        """How many top logprobs per token to send: 0 when not asked (or when playing a server without them)."""
        if not self.behaviour.logprobs or body.get("logprobs") is not True:
            return 0
        top = body.get("top_logprobs")
        return min(20, top) if isinstance(top, int) and not isinstance(top, bool) and top > 0 else 1

    @staticmethod
    def _shape(kind: str, content: str, info: RequestInfo) -> str:
        if kind == "malformed":
            return _malformed(content)
        if kind == "repairable":
            return _repairable(content)
        if kind == "fenced":
            return _fenced(content)
        if kind == "think":
            return _think(content)
        if kind == "missing_fields":
            return _missing_fields(content, info)
        if kind == "truncated":
            return content[: max(1, len(content) // 2)]
        return content
