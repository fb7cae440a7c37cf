"""A run as one OpenTelemetry trace, built from the event stream (the GenAI semantic conventions' spans).

Loaded only for a traced run (core.telemetry.setup.trace_sink). The tree:

* ``invoke_workflow swarm-tui.METHOD``: the run (RunStarted … RunFinished), with its end reason, tokens, cost;
* ``round N`` under it: a round (a method's step or turn), with its routed edges as ``swarm.edge`` span events
  (``swarm.edge.src``, ``.dst``, ``.score``, ``.kept`` and, for an edge routing removed, ``.reason``), so a
  round's graph can be rebuilt from the trace alone, steering as ``swarm.steer`` events and the Manager's
  decision as ``swarm.decision``;
* ``invoke_agent AGENT`` per agent turn (``gen_ai.agent.name``), and in it ``chat MODEL``, the model call,
  with ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``, ``output_tokens`` and
  ``cache_read.input_tokens`` (and ``swarm.cost_usd``);
* ``execute_tool run_tests``: a code check in the sandbox (TestRun).

Times are the events' own, so a span lasts what its events say. Contents (the problem, replies, goals,
steering text) only with the conventions' opt-in (``TraceTarget.capture_content``); never a key (the
endpoint is recorded as the events carry it, already redacted).

Export never slows or breaks a run: spans are batched and sent from the SDK's own thread with a short
timeout; a collector that does not take them costs one notice (``notify``), after which sending pauses a
while rather than retrying each batch; any error inside the sink turns the sink off, with one notice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from core import __version__
from core.runtime import events as ev
from core.runtime.outcome import EndReason
from core.telemetry.target import TraceTarget

EXPORT_TIMEOUT_S = 2.0  # one batch's send; in the SDK's thread, never the run's
PAUSE_AFTER_FAILURE_S = 60.0  # a collector that refused a batch is not asked again for this long


class _Exporter(SpanExporter):
    """OTLP/HTTP to one collector; says once when the collector does not take a batch, then pauses a while."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.inner = OTLPSpanExporter(endpoint=endpoint, timeout=EXPORT_TIMEOUT_S)
        self.listeners: set[Callable[[str], None]] = set()
        self.told = False
        self.paused_until = 0.0
        self.lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if time.monotonic() < self.paused_until:
            return SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        except Exception:  # the exporter's own failure is a failed batch, never the run's
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.FAILURE:
            self.paused_until = time.monotonic() + PAUSE_AFTER_FAILURE_S
            with self.lock:
                tell, self.told = not self.told, True
                listeners = list(self.listeners)
            if tell:
                for listener in listeners:
                    listener(f"the trace collector at {self.endpoint} did not take the run's spans; the run goes on "
                             "without them")
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()  # type: ignore[no-untyped-call]  # the exporter's shutdown carries no annotation

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_PROVIDERS: dict[tuple[str, str], tuple[TracerProvider, _Exporter]] = {}
_PROVIDERS_LOCK = threading.Lock()


def _provider(target: TraceTarget) -> tuple[TracerProvider, _Exporter]:
    """One provider (and batch thread) per collector and service, shared by the process's runs."""
    with _PROVIDERS_LOCK:
        found = _PROVIDERS.get((target.endpoint, target.service))
        if found is None:
            # The SDK logs a failed export with a traceback: the one notice says it instead (a TUI's screen
            # and a headless run's stderr stay clean).
            logging.getLogger("opentelemetry").propagate = False
            logging.getLogger("opentelemetry").addHandler(logging.NullHandler())
            exporter = _Exporter(target.endpoint)
            provider = TracerProvider(resource=Resource.create({"service.name": target.service,
                                                                "service.version": __version__}))
            provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=1000,
                                                           export_timeout_millis=int(EXPORT_TIMEOUT_S * 1000)))
            found = _PROVIDERS[(target.endpoint, target.service)] = (provider, exporter)
        return found


def _ns(ts: float) -> int:
    return int(ts * 1_000_000_000)


Attributes = dict[str, str | int | float | bool | list[str]]


class TraceSink:
    """The event sink that writes one run's trace (see the module's docstring)."""

    def __init__(self, target: TraceTarget) -> None:
        self.provider, self.exporter = _provider(target)
        self.tracer = self.provider.get_tracer("swarm-tui", __version__)
        self.capture = target.capture_content
        self.notify: Callable[[str], None] | None = None  # the run's notice (core.compose.assembly sets it)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.run: Span | None = None
        self.model = ""
        self.server: Attributes = {}
        self.rounds: dict[int, Span] = {}
        self.calls: dict[tuple[int, str, str], tuple[Span, Span]] = {}
        self.edges: dict[int, set[tuple[str, str]]] = {}  # the edges already in each round's trace
        self.broken = False
        self.exporter.listeners.add(self._collector_failed)
        self.handlers: dict[type[ev.Event], Callable[[Any], None]] = {
            ev.RunStarted: self._run_started, ev.RoundStarted: self._round_started,
            ev.RoundFinished: self._round_finished, ev.AgentStarted: self._agent_started,
            ev.AgentFinished: self._agent_finished, ev.TopologyBuilt: self._topology,
            ev.MessagesRouted: self._messages, ev.ManagerDecided: self._decided, ev.UserSteered: self._steered,
            ev.TestRun: self._test_run, ev.Notice: self._notice, ev.RunFinished: self._run_finished,
        }

    # --- the sink ---------------------------------------------------------------------------------
    def __call__(self, event: ev.Event) -> None:
        handler = self.handlers.get(type(event))
        if handler is None or self.broken:
            return
        try:
            handler(event)
        except Exception as exc:  # a trace must never break a run: the sink stops, once, and says so
            self.broken = True
            self._tell(f"tracing stopped for this run: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """The run is over (or stopped without finishing): end what is open; stop listening."""
        self.exporter.listeners.discard(self._collector_failed)
        if self.run is not None and not self.broken:
            self._end_all(time.time(), "the run stopped without finishing")
            self.run.set_status(Status(StatusCode.ERROR, "the run stopped without finishing"))
            self.run.end()
            self.run = None

    def _tell(self, message: str) -> None:
        if self.notify is not None and self.run is not None:  # after RunFinished nothing more is said
            self.notify(message)

    def _collector_failed(self, message: str) -> None:
        """From the exporter's thread: the notice goes out on the run's own loop."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._tell, message)

    # --- spans ------------------------------------------------------------------------------------
    def _parent(self, round_no: int) -> Span | None:
        return self.rounds.get(round_no) or self.run

    def _start(self, name: str, parent: Span | None, ts: float, attributes: Attributes,
               kind: SpanKind = SpanKind.INTERNAL) -> Span:
        context = trace.set_span_in_context(parent) if parent is not None else None
        return self.tracer.start_span(name, context=context, kind=kind, attributes=attributes, start_time=_ns(ts))

    def _run_started(self, e: ev.RunStarted) -> None:
        try:
            self.loop = asyncio.get_running_loop()
        except RuntimeError:  # a replay fed outside a loop: notices have nowhere to go
            self.loop = None
        self.model = e.model
        parts = urlsplit(e.base_url)
        self.server = {"server.address": parts.hostname or ""}
        if parts.port:
            self.server["server.port"] = parts.port
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": f"swarm-tui.{e.strategy}",
            "gen_ai.request.model": e.model, "gen_ai.conversation.id": e.run_id, "swarm.run_id": e.run_id,
            "swarm.strategy": e.strategy, "swarm.domain": str(e.domain), "swarm.protocol": str(e.protocol),
            "swarm.demo": e.demo, "swarm.manager": e.manager, "swarm.workers": list(e.workers), **self.server,
            **{f"swarm.params.{k}": v for k, v in e.params.items() if isinstance(v, int | float | str | bool)},
        }
        if self.capture:
            attributes["swarm.problem"] = e.problem
        self.run = self._start(f"invoke_workflow swarm-tui.{e.strategy}", None, e.ts, attributes)

    def _round_started(self, e: ev.RoundStarted) -> None:
        for number in [n for n in self.rounds if n != e.round]:  # a round ends where the next begins
            self.rounds.pop(number).end(_ns(e.ts))
        if e.round not in self.rounds:
            params = {f"swarm.params.{k}": v for k, v in e.params.items() if isinstance(v, int | float | str | bool)}
            self.rounds[e.round] = self._start(f"round {e.round}", self.run, e.ts, {"swarm.round": e.round, **params})

    def _round_finished(self, e: ev.RoundFinished) -> None:
        span = self.rounds.pop(e.round, None)
        if span is not None:
            span.set_attributes({"swarm.run.input_tokens": e.prompt_tokens,
                                 "swarm.run.output_tokens": e.completion_tokens})
            if e.convergence is not None:
                span.set_attribute("swarm.convergence", e.convergence)
            span.end(_ns(e.ts))

    def _agent_started(self, e: ev.AgentStarted) -> None:
        key = (e.round, e.agent, e.call)
        if key in self.calls:  # the same call asked again (a retry, a re-ask): one span, marked
            self.calls[key][1].add_event("swarm.retry", timestamp=_ns(e.ts))
            return
        self.calls[key] = self._call_spans(e.round, e.agent, e.call, e.ts, e.tier)

    def _call_spans(self, round_no: int, agent: str, call: str, ts: float,
                    tier: int | None = None) -> tuple[Span, Span]:
        attributes: Attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
                                  "swarm.call": call, "swarm.round": round_no}
        if tier is not None:
            attributes["swarm.tier"] = tier
        turn = self._start(f"invoke_agent {agent}", self._parent(round_no), ts, attributes)
        chat = self._start(f"chat {self.model}", turn, ts, {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": self.model,
            "gen_ai.agent.name": agent, **self.server}, SpanKind.CLIENT)
        return turn, chat

    def _agent_finished(self, e: ev.AgentFinished) -> None:
        found = self.calls.pop((e.round, e.agent, e.call), None)  # None: a call announced only as finished
        turn, chat = found if found is not None else self._call_spans(e.round, e.agent, e.call, e.ts - e.latency_s)
        model = e.model or self.model
        chat.update_name(f"chat {model}")
        usage: Attributes = {"gen_ai.request.model": model, "gen_ai.usage.input_tokens": e.prompt_tokens,
                             "gen_ai.usage.output_tokens": e.completion_tokens, "swarm.attempts": e.attempts,
                             "swarm.usage_estimated": e.usage_estimated, "swarm.call.status": str(e.status)}
        if e.cached_tokens is not None:
            usage["gen_ai.usage.cache_read.input_tokens"] = e.cached_tokens
        if e.cost_usd is not None:
            usage["swarm.cost_usd"] = e.cost_usd
        chat.set_attributes(usage)
        turn.set_attribute("swarm.call.status", str(e.status))
        if self.capture and e.raw:
            chat.set_attribute("gen_ai.output.messages", json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": e.raw}]}], ensure_ascii=False))
        if e.status == ev.CallStatus.FAILED:
            for span in (chat, turn):
                span.set_status(Status(StatusCode.ERROR, e.error[:300]))
        chat.end(_ns(e.ts))
        turn.end(_ns(e.ts))

    # --- the round's graph, decisions, steering, checks --------------------------------------------
    def _edge(self, round_no: int, ts: float, src: str, dst: str, score: float | None, kept: bool,
              reason: str = "", kind: str = "") -> None:
        seen = self.edges.setdefault(round_no, set())
        if kept and (src, dst) in seen:
            return
        seen.add((src, dst))
        attributes: Attributes = {"swarm.edge.src": src, "swarm.edge.dst": dst, "swarm.edge.kept": kept,
                                  "swarm.round": round_no}
        if score is not None:
            attributes["swarm.edge.score"] = float(score)
        if reason:
            attributes["swarm.edge.reason"] = reason
        if kind:
            attributes["swarm.edge.kind"] = kind
        span = self._parent(round_no)
        if span is not None:
            span.add_event("swarm.edge", attributes, timestamp=_ns(ts))

    def _topology(self, e: ev.TopologyBuilt) -> None:
        routing = e.routing
        if e.rerouted:
            self.edges.pop(e.round, None)  # the new graph replaces the earlier one: its edges come again
        span = self._parent(e.round)
        if span is not None:
            span.add_event("swarm.topology", {
                "swarm.round": e.round, "swarm.strategy": e.strategy, "swarm.rerouted": e.rerouted,
                "swarm.topology.order": [str(n) for n in routing.get("order", [])],
                "swarm.topology.tau": float(routing.get("tau", 0.0)),
                "swarm.topology.k_in": int(routing.get("k_in", 0)),
            }, timestamp=_ns(e.ts))
        for edge in routing.get("edges", []):
            self._edge(e.round, e.ts, edge["src"], edge["dst"], edge.get("score"), True, kind=edge.get("kind", ""))
        for edge in routing.get("removed", []):
            self._edge(e.round, e.ts, edge["src"], edge["dst"], edge.get("score"), False, str(edge.get("reason", "")),
                       edge.get("kind", ""))

    def _messages(self, e: ev.MessagesRouted) -> None:
        """Deliveries along edges no graph announced (a broadcast round): edges of the round too."""
        for delivery in e.deliveries:
            score = delivery.get("score")
            self._edge(e.round, e.ts, str(delivery.get("src", "")), str(delivery.get("dst", "")),
                       score if isinstance(score, int | float) else None, True, kind="broadcast" if e.broadcast else "")

    def _decided(self, e: ev.ManagerDecided) -> None:
        attributes: Attributes = {"swarm.decision.terminate": e.terminate, "swarm.decision.plan": e.plan,
                                  "swarm.decision.status": str(e.status)}
        if self.capture:
            attributes.update({"swarm.decision.next_goal": e.next_goal, "swarm.decision.final_answer": e.final_answer})
        span = self._parent(e.round)
        if span is not None:
            span.add_event("swarm.decision", attributes, timestamp=_ns(e.ts))

    def _steered(self, e: ev.UserSteered) -> None:
        attributes: Attributes = {"swarm.steer.action": e.action, "swarm.steer.target": e.target,
                                  "swarm.steer.accepted": e.accepted, "swarm.steer.phase": e.phase,
                                  "swarm.round": e.round}
        if e.reason:
            attributes["swarm.steer.reason"] = e.reason
        if self.capture and e.payload:
            attributes["swarm.steer.payload"] = json.dumps(e.payload, ensure_ascii=False, default=str)
        span = self._parent(e.round)
        if span is not None:
            span.add_event("swarm.steer", attributes, timestamp=_ns(e.ts))

    def _test_run(self, e: ev.TestRun) -> None:
        attributes: Attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "run_tests",
                                  "swarm.test.outcome": e.outcome, "swarm.test.passed": e.passed,
                                  "swarm.test.source_agent": e.source_agent, "swarm.round": e.round}
        if self.capture and e.failing_test:
            attributes["swarm.test.failing_test"] = e.failing_test
        span = self._start("execute_tool run_tests", self._parent(e.round), e.ts - e.duration_s, attributes)
        if not e.passed:
            span.set_status(Status(StatusCode.ERROR, e.outcome))
        span.end(_ns(e.ts))

    def _notice(self, e: ev.Notice) -> None:
        span = self._parent(e.round)
        if span is not None:
            span.add_event("swarm.notice", {"swarm.notice.severity": str(e.severity), "swarm.notice.message":
                                            e.message[:1000], "swarm.notice.agent": e.agent}, timestamp=_ns(e.ts))

    def _end_all(self, ts: float, why: str) -> None:
        for turn, chat in self.calls.values():  # cut off in flight: no AgentFinished came
            for span in (chat, turn):
                span.set_status(Status(StatusCode.ERROR, why))
                span.end(_ns(ts))
        self.calls.clear()
        for span in self.rounds.values():
            span.end(_ns(ts))
        self.rounds.clear()

    def _run_finished(self, e: ev.RunFinished) -> None:
        self._end_all(e.ts, "cut off in flight when the run ended")
        run = self.run
        if run is None:
            return
        attributes: Attributes = {
            "swarm.end_reason": str(e.reason), "swarm.end_detail": e.detail, "swarm.rounds": e.rounds,
            "gen_ai.usage.input_tokens": e.prompt_tokens, "gen_ai.usage.output_tokens": e.completion_tokens,
            "swarm.tokens_estimated": e.tokens_estimated, "swarm.answer_source": e.answer_source,
        }
        if e.cached_tokens is not None:
            attributes["gen_ai.usage.cache_read.input_tokens"] = e.cached_tokens
        if e.cost_usd is not None:
            attributes["swarm.cost_usd"] = e.cost_usd
        if e.cost_unknown:
            attributes["swarm.cost_unknown"] = list(e.cost_unknown)
        if e.solved is not None:
            attributes["swarm.solved"] = e.solved
        if self.capture:
            attributes["swarm.final_answer"] = e.final_answer
        run.set_attributes(attributes)
        if e.reason == EndReason.ERROR:
            run.set_status(Status(StatusCode.ERROR, e.detail[:300]))
        run.end(_ns(e.ts))
        self.run = None
        # Send now rather than at the next batch tick, from a thread of its own: the run never waits for it.
        threading.Thread(target=self.provider.force_flush, name="swarm-trace-flush", daemon=True).start()
