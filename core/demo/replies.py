"""How the scripted server writes an answer: a whole JSON completion or a paced SSE stream (with the
faults that shape one: a stall, a dropped connection, an error event, endless text), the HTTP errors a
fault sends instead of a reply, and the scripted logprobs. core.demo.server decides what to answer; this
module only writes it, at the pace and with the reports its ServerBehaviour sets."""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from io import BufferedIOBase
from typing import Any, Protocol

from core.demo.behaviour import ServerBehaviour
from core.demo.faults import FaultRule


class Answer(Protocol):
    """The request handler's side that writes: what ReplyWriter and send_fault need of it."""

    wfile: BufferedIOBase

    def send_response(self, code: int, message: str | None = None) -> None: ...
    def send_header(self, keyword: str, value: str) -> None: ...
    def end_headers(self) -> None: ...
    def _send_json(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None: ...
    def _write_chunk(self, data: bytes) -> None: ...
    def _reset(self) -> None: ...
    def _abort(self) -> None: ...
    @property
    def headers(self) -> Any: ...


def error_body(message: str, kind: str, code: str | None) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}}).encode()


def send_fault(handler: Answer, fault: FaultRule | None, body: dict[str, Any]) -> bool:
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
            error_body("Rate limit reached (scripted)", "rate_limit_error", "rate_limit_exceeded"),
            headers,
        )
        return True
    if kind == "http_500":
        handler._send_json(500, error_body("Internal server error (scripted)", "server_error", None))
        return True
    if kind == "http_401":
        body_401 = error_body("Invalid API key (scripted)", "invalid_request_error", "invalid_api_key")
        handler._send_json(401, body_401)
        return True
    if kind == "http_403":
        key = handler.headers.get("Authorization", "").removeprefix("Bearer ")
        message = f"key {key} may not use this model (scripted)"
        handler._send_json(403, error_body(message, "permission_error", None))
        return True
    if kind == "http_404":
        message = f"The model {body.get('model')!r} does not exist (scripted)"
        handler._send_json(404, error_body(message, "invalid_request_error", "model_not_found"))
        return True
    if kind == "reject_json_schema":
        handler._send_json(
            400,
            error_body(
                "response_format type json_schema is not supported by this server (scripted)",
                "invalid_request_error",
                None,
            ),
        )
        return True
    if kind == "reject_response_format":
        handler._send_json(
            400,
            error_body(
                "response_format is not supported by this server (scripted)",
                "invalid_request_error",
                None,
            ),
        )
        return True
    return False


class ReplyWriter:
    """Writes one completion as the behaviour says (chunk size and pace, the stall's length, the model's
    name); ``stopping`` is the server's: set, every wait ends and the connection is aborted."""

    def __init__(self, behaviour: ServerBehaviour, stopping: threading.Event) -> None:
        self.behaviour = behaviour
        self.stopping = stopping

    def whole(
        self,
        handler: Answer,
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
            data["choices"][0]["logprobs"] = {"content": scripted_logprobs(content, self.pieces(content), top)}
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
        if kind == "drop" or self.stopping.wait(self.behaviour.stall_seconds):
            handler._abort()
            return
        handler.wfile.write(payload[half:])

    def pieces(self, content: str) -> list[str]:
        return [content[i : i + self.behaviour.chunk_chars] for i in range(0, len(content), self.behaviour.chunk_chars)]

    def stream(
        self,
        handler: Answer,
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
        pieces = self.pieces(content)
        # One scripted token per streamed piece; its logprobs ride on the piece's chunk.
        chunks.token_logprobs = scripted_logprobs(content, pieces, top) if top else []

        if kind == "stall":
            # One content chunk, then silence (stop() cuts it short).
            if pieces:
                write(chunks.piece(0, pieces[0]))
                pieces, chunks.token_logprobs = pieces[1:], chunks.token_logprobs[1:]
            if self.stopping.wait(self.behaviour.stall_seconds):
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
            while not (self.stopping.wait(interval) if interval > 0 else self.stopping.is_set()):
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

    def _paced(self, handler: Answer, chunks: _Chunks, pieces: list[str]) -> bool:
        """Every piece at the chunk delay; False when stop() cut the stream (the connection is aborted)."""
        start = time.monotonic()
        for i, piece in enumerate(pieces):
            if i and self.behaviour.chunk_delay > 0:
                # Pace against an absolute schedule so the rate holds under load.
                wait = start + i * self.behaviour.chunk_delay - time.monotonic()
                if wait > 0 and self.stopping.wait(wait):
                    handler._abort()
                    return False
            handler._write_chunk(chunks.piece(i, piece))
        return True

    @staticmethod
    def _broken_stream(handler: Answer, chunks: _Chunks, pieces: list[str], kind: str) -> None:
        """One piece, then an error event (stream_error) or a chunk that is not JSON (garbage_chunk)."""
        write = handler._write_chunk
        if pieces:
            write(chunks.piece(0, pieces[0]))
        if kind == "stream_error":
            write(f"data: {error_body('the model crashed mid-reply', 'server_error', None).decode()}\n\n".encode())
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
