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
import hashlib
import json
import math
import socket
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from core.demo.behaviour import ServerBehaviour
from core.llm.call_id import CALL_ID_HEADER
from core.runtime.events import CallKind
from core.runtime.scripted import RequestInfo, Script, estimate_tokens, parse_request, played_instead, text_of

FAULT_KINDS = (
    "malformed",  # prose with no JSON at all: no repair can fix it
    "repairable",  # broken JSON (unquoted keys, single quotes, trailing comma, cut-off end) json-repair fixes
    "fenced",  # valid JSON inside ```json fences, with a line of prose before it
    "think",  # <think>…</think> (with braces inside) and prose, then valid JSON
    "missing_fields",  # valid JSON without query/key (workers) or goal (Manager)
    "http_429",
    "http_500",
    "http_401",  # the key is refused
    "http_403",  # forbidden, with a message that echoes the bearer key back (as some proxies do)
    "http_404",  # no such model
    "stall",  # headers and one chunk, then silence for stall_seconds, then the rest
    "drop",  # part of the reply, then the connection is closed mid-body
    "reject_response_format",  # 400 when the request asks for response_format (no JSON mode)
    "reject_json_schema",  # 400 when the request asks for response_format of type json_schema (JSON mode is fine)
    "truncated",  # the first half of the reply, ending with finish_reason "length" (cut off at max_tokens)
    "stream_error",  # one chunk, then an {"error": ...} event inside the stream (as OpenAI sends one)
    "garbage_chunk",  # one chunk, then a data line that is not JSON (and holds an escape sequence)
    "reset",  # the connection is reset (RST) before any answer, the request read
    "endless",  # the reply, then more text without end, a chunk every ``interval`` seconds (ignores max_tokens)
)

DEFAULT_BEHAVIOUR = ServerBehaviour()
_GENERIC_REPLY = json.dumps({"reply": "Hello from the swarm-tui scripted server."})


@dataclass
class FaultRule:
    kind: str  # one of FAULT_KINDS
    role: str | None = None  # None = any
    call: str | None = None
    round: int | None = None
    times: int = 1  # matching requests it applies to before it is used up; <= 0 means never used up
    retry_after: float | None = None  # http_429: the Retry-After it sends, in seconds (default: retry at once)
    send_retry_after: bool = True  # http_429: False sends no Retry-After at all (a busy local server)
    interval: float = 0.0  # endless: seconds between its chunks (0: as fast as it can; a trickle above)

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}: choose one of {', '.join(FAULT_KINDS)}")

    def matches(self, info: RequestInfo) -> bool:
        if self.kind == "reject_response_format" and "response_format" not in info.body:
            return False
        if self.kind == "reject_json_schema":
            response_format = info.body.get("response_format")
            if not (isinstance(response_format, dict) and response_format.get("type") == "json_schema"):
                return False
        return (
            (self.role is None or self.role == info.role)
            and (self.call is None or self.call == info.call)
            and (self.round is None or self.round == info.round)
        )


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


def _error_body(message: str, kind: str, code: str | None) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}}).encode()


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
        return _error_body("the input length exceeds the context length", "invalid_request_error", None)
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
                404, _error_body(f"no route GET {self.path}", "invalid_request_error", "not_found")
            )

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self._path().endswith("/chat/completions"):
            self._send_json(
                404, _error_body(f"no route POST {self.path}", "invalid_request_error", "not_found")
            )
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not an object")
        except ValueError as exc:
            self._send_json(400, _error_body(f"invalid JSON body: {exc}", "invalid_request_error", None))
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
        if self._send_fault(handler, fault, body):
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
            self._stream(handler, completion_id, content, usage if want_usage else None, kind, top, interval, timings)
        else:
            self._respond(handler, completion_id, content, usage if self.behaviour.usage else None, kind, top, timings)

    def _send_fault(self, handler: _Handler, fault: FaultRule | None, body: dict[str, Any]) -> bool:
        """Answer with the fault's error (or drop the connection) instead of a reply; False when there is no
        fault or it shapes the reply instead (malformed JSON, a stall, ...)."""
        kind = fault.kind if fault else ""
        if kind == "reset":
            handler._reset()
            return True
        if kind == "http_429":
            # retry-after-ms wins in the openai SDK and in core.llm.client: retry almost at once by default.
            headers = {"retry-after": "0", "retry-after-ms": "10"}
            if fault is not None and not fault.send_retry_after:
                headers = {}
            elif fault is not None and fault.retry_after is not None:
                wait = max(0.0, fault.retry_after)
                headers = {"retry-after": str(math.ceil(wait)), "retry-after-ms": str(round(wait * 1000))}
            handler._send_json(
                429,
                _error_body("Rate limit reached (scripted)", "rate_limit_error", "rate_limit_exceeded"),
                headers,
            )
            return True
        if kind == "http_500":
            handler._send_json(500, _error_body("Internal server error (scripted)", "server_error", None))
            return True
        if kind == "http_401":
            body_401 = _error_body("Invalid API key (scripted)", "invalid_request_error", "invalid_api_key")
            handler._send_json(401, body_401)
            return True
        if kind == "http_403":
            key = handler.headers.get("Authorization", "").removeprefix("Bearer ")
            message = f"key {key} may not use this model (scripted)"
            handler._send_json(403, _error_body(message, "permission_error", None))
            return True
        if kind == "http_404":
            message = f"The model {body.get('model')!r} does not exist (scripted)"
            handler._send_json(404, _error_body(message, "invalid_request_error", "model_not_found"))
            return True
        if kind == "reject_json_schema":
            handler._send_json(
                400,
                _error_body(
                    "response_format type json_schema is not supported by this server (scripted)",
                    "invalid_request_error",
                    None,
                ),
            )
            return True
        if kind == "reject_response_format":
            handler._send_json(
                400,
                _error_body(
                    "response_format is not supported by this server (scripted)",
                    "invalid_request_error",
                    None,
                ),
            )
            return True
        return False

    def _scripted(self, handler: _Handler, info: RequestInfo) -> str | None:
        """The script's reply to this request (a generic one without the call header); None when the script
        failed and a 500 went out instead."""
        if not info.has_header:
            content = _GENERIC_REPLY
        else:
            try:
                content = self.script(info)
            except Exception as exc:  # a broken script must show up as a server error, not a hang
                handler._send_json(500, _error_body(f"script error: {exc!r}", "server_error", None))
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

    def _respond(
        self,
        handler: _Handler,
        completion_id: str,
        content: str,
        usage: dict[str, int] | None,
        kind: str,
        top: int = 0,
        timings: dict[str, Any] | None = None,
    ) -> None:
        data: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.behaviour.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "length" if kind == "truncated" else "stop",
                }
            ],
        }
        if usage is not None:
            data["usage"] = usage
        if timings is not None:
            data["timings"] = timings
        if top:
            data["choices"][0]["logprobs"] = {"content": scripted_logprobs(content, self._pieces(content), top)}
        payload = json.dumps(data).encode()
        if kind not in ("stall", "drop"):
            handler._send_json(200, payload)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        half = len(payload) // 2
        handler.wfile.write(payload[:half])
        if kind == "drop" or self._stopping.wait(self.behaviour.stall_seconds):
            handler._abort()
            return
        handler.wfile.write(payload[half:])

    def _pieces(self, content: str) -> list[str]:
        return [content[i : i + self.behaviour.chunk_chars] for i in range(0, len(content), self.behaviour.chunk_chars)]

    def _stream(
        self,
        handler: _Handler,
        completion_id: str,
        content: str,
        usage: dict[str, int] | None,
        kind: str,
        top: int = 0,
        interval: float = 0.0,
        timings: dict[str, Any] | None = None,
    ) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

        chunks = _Chunks(completion_id, self.behaviour.model)
        write = handler._write_chunk
        write(chunks.choice('{"role": "assistant", "content": ""}'))
        pieces = self._pieces(content)
        # One scripted token per streamed piece; its logprobs ride on the piece's chunk.
        chunks.token_logprobs = scripted_logprobs(content, pieces, top) if top else []

        if kind == "stall":
            # One content chunk, then silence (stop() cuts it short).
            if pieces:
                write(chunks.piece(0, pieces[0]))
                pieces, chunks.token_logprobs = pieces[1:], chunks.token_logprobs[1:]
            if self._stopping.wait(self.behaviour.stall_seconds):
                handler._abort()
                return
        if kind in ("stream_error", "garbage_chunk"):
            self._broken_stream(handler, chunks, pieces, kind)
            return
        if kind == "drop":
            pieces = pieces[: max(1, len(pieces) // 2)]
        if not self._paced(handler, chunks, pieces):
            return
        if kind == "drop":
            handler._abort()
            return
        if kind == "endless":  # never finishes: more of the same until the client or stop() ends it
            filler = chunks.choice(json.dumps({"content": " and so on"}))
            while not (self._stopping.wait(interval) if interval > 0 else self._stopping.is_set()):
                write(filler)  # raises once the client has gone (do_POST ends the handler quietly)
            handler._abort()
            return
        write(chunks.choice("{}", '"length"' if kind == "truncated" else '"stop"'))
        if timings is not None:  # llama.cpp sends its timings with the last chunk
            write(chunks.event(f'"choices": [], "timings": {json.dumps(timings)}'))
        if usage is not None:
            write(chunks.event(f'"choices": [], "usage": {json.dumps(usage)}'))
        write(b"data: [DONE]\n\n")
        write(b"")  # the terminating zero-size chunk

    def _paced(self, handler: _Handler, chunks: _Chunks, pieces: list[str]) -> bool:
        """Every piece at the chunk delay; False when stop() cut the stream (the connection is aborted)."""
        start = time.monotonic()
        for i, piece in enumerate(pieces):
            if i and self.behaviour.chunk_delay > 0:
                # Pace against an absolute schedule so the rate holds under load.
                wait = start + i * self.behaviour.chunk_delay - time.monotonic()
                if wait > 0 and self._stopping.wait(wait):
                    handler._abort()
                    return False
            handler._write_chunk(chunks.piece(i, piece))
        return True

    @staticmethod
    def _broken_stream(handler: _Handler, chunks: _Chunks, pieces: list[str], kind: str) -> None:
        """One piece, then an error event (stream_error) or a chunk that is not JSON (garbage_chunk)."""
        write = handler._write_chunk
        if pieces:
            write(chunks.piece(0, pieces[0]))
        if kind == "stream_error":
            write(f"data: {_error_body('the model crashed mid-reply', 'server_error', None).decode()}\n\n".encode())
        else:
            write(b"data: {\"choices\": [\x1b]0;owned\x07\n\n")
        write(b"data: [DONE]\n\n")
        write(b"")


class _Chunks:
    """The server-sent events of one streamed completion, each built on one shared prefix."""

    def __init__(self, completion_id: str, model: str) -> None:
        self.head = json.dumps(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
            }
        )[:-1]  # reused prefix without the closing brace: per-chunk work stays tiny
        self.token_logprobs: list[dict[str, Any]] = []

    def event(self, rest: str) -> bytes:
        return f"data: {self.head}, {rest}}}\n\n".encode()

    def choice(self, delta: str, finish: str = "null", logprobs: str = "") -> bytes:
        extra = f', "logprobs": {logprobs}' if logprobs else ""
        return self.event(f'"choices": [{{"index": 0, "delta": {delta}{extra}, "finish_reason": {finish}}}]')

    def piece(self, index: int, piece: str) -> bytes:
        if not self.token_logprobs:
            return self.choice(json.dumps({"content": piece}))
        return self.choice(json.dumps({"content": piece}),
                           logprobs=json.dumps({"content": [self.token_logprobs[index]]}))


# --- logprobs ------------------------------------------------------------------------------------


def _unit(text: str) -> float:
    """A number in [0, 1) fixed by the text."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "big") / 2.0**64


def scripted_logprobs(content: str, tokens: list[str], top: int) -> list[dict[str, Any]]:
    """OpenAI-shaped ``logprobs.content`` entries, one per token, deterministic per reply text.

    Each reply gets its own sharpness from a hash of its whole text (so replies differ in confidence,
    which is what an entropy signal needs), each token a little jitter from its own hash. The top
    alternatives hold 95 % of the mass; the rest is the unlisted vocabulary."""
    sharpness = 0.4 + 3.6 * _unit(content)
    out: list[dict[str, Any]] = []
    for index, token in enumerate(tokens):
        weights = [
            math.exp(-sharpness * rank + 0.5 * _unit(f"{index}:{rank}:{token}")) for rank in range(max(1, top))
        ]
        weights.sort(reverse=True)
        total = sum(weights) / 0.95
        logprobs = [math.log(w / total) for w in weights]
        alternatives = [token] + [f"<alt{rank}>" for rank in range(1, len(logprobs))]
        out.append(
            {
                "token": token,
                "logprob": logprobs[0],
                "bytes": None,
                "top_logprobs": [
                    {"token": alt, "logprob": lp, "bytes": None} for alt, lp in zip(alternatives, logprobs, strict=True)
                ],
            }
        )
    return out
