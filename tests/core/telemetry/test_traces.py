"""A run as one OpenTelemetry trace (issue 43, item 2), checked by what a collector receives: a real OTLP/HTTP
receiver on 127.0.0.1 decoding the protobuf requests the SDK's exporter sends."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from core.compose.assembly import RunIO, open_run
from core.compose.plan import BackendChoice, RunPlan
from core.demo.scripts import DEMO_PROBLEMS
from core.methods.catalogue import method_names
from core.runtime import events as ev
from core.runtime.config import Settings
from core.telemetry.setup import trace_target
from tests.core.telemetry.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.support.paths import ROOT

SECRET = "sk-canary-0123456789abcdef"


async def traced_run(settings: Settings, embedder: Any, delay: float = 0.0) -> tuple[ev.RunFinished, list[ev.Event]]:
    events: list[ev.Event] = []
    io = RunIO(sinks=[events.append], backend=BackendChoice(demo=True, demo_chunk_delay=delay), embedder=embedder)
    async with open_run(RunPlan.make(settings), DEMO_PROBLEMS[settings.domain], io) as run:
        finished = await run.run()
    return finished, events


def by_id(spans: list[ReceivedSpan]) -> dict[str, ReceivedSpan]:
    return {s.span_id: s for s in spans}


@pytest.mark.parametrize("strategy", method_names())
async def test_a_run_is_one_trace_with_its_calls_tokens_and_edges(
        strategy: str, embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    with OtlpReceiver() as collector:
        settings = Settings(strategy=strategy, max_rounds=3, otel_endpoint=collector.url)
        finished, events = await traced_run(settings, embedder)
        spans = collector.wait_for("invoke_workflow")
    assert len({s.trace_id for s in spans}) == 1, "a run is one trace"
    ids = by_id(spans)
    roots = [s for s in spans if not s.parent_id]
    assert len(roots) == 1 and roots[0].name == f"invoke_workflow swarm-tui.{strategy}"
    root = roots[0]
    assert root.attributes["swarm.end_reason"] == str(finished.reason)
    assert root.resource["service.name"] == "swarm-tui"
    rounds = {s.attributes["swarm.round"]: s for s in spans if s.name.startswith("round ")}
    assert all(s.parent_id == root.span_id for s in rounds.values())
    turns = [s for s in spans if s.name.startswith("invoke_agent ")]
    chats = [s for s in spans if s.name.startswith("chat ")]
    calls = [e for e in events if isinstance(e, ev.AgentFinished)]
    assert len(turns) == len(chats) == len(calls) > 0
    for turn in turns:
        assert ids[turn.parent_id] in (root, *rounds.values())
        assert turn.attributes["gen_ai.agent.name"] == turn.name.removeprefix("invoke_agent ")
    for chat in chats:
        parent = ids[chat.parent_id]
        assert parent.name.startswith("invoke_agent ") and chat.attributes["gen_ai.request.model"]
    # The chat spans' tokens are the run's.
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == finished.prompt_tokens
    assert sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats) == finished.completion_tokens
    assert Counter(c.attributes["gen_ai.agent.name"] for c in chats) == Counter(e.agent for e in calls)
    # Every routed edge is in the trace, on its round's span, with its score and whether routing kept it.
    traced = {(attrs["swarm.round"], attrs["swarm.edge.src"], attrs["swarm.edge.dst"]): attrs
              for s in spans for name, attrs in s.events if name == "swarm.edge"}
    for built in (e for e in events if isinstance(e, ev.TopologyBuilt)):
        for edge in built.routing["edges"]:
            got = traced[(built.round, edge["src"], edge["dst"])]
            assert got["swarm.edge.kept"] is True and got["swarm.edge.score"] == pytest.approx(edge["score"])
        for edge in built.routing["removed"]:
            got = traced[(built.round, edge["src"], edge["dst"])]
            assert got["swarm.edge.kept"] is False and got["swarm.edge.reason"] == edge["reason"]
    for routed in (e for e in events if isinstance(e, ev.MessagesRouted)):
        assert all((routed.round, d["src"], d["dst"]) in traced for d in routed.deliveries)
    # No key, and no content without the opt-in.
    raw = b"".join(collector.bodies)
    assert SECRET.encode() not in raw
    assert DEMO_PROBLEMS[settings.domain][:60].encode() not in raw
    assert not any("gen_ai.output.messages" in c.attributes for c in chats)


async def test_code_checks_are_tool_spans_and_contents_need_the_opt_in(
        embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    with OtlpReceiver() as collector:
        settings = Settings(max_rounds=2, execute_code=True, otel_endpoint=collector.url)
        finished, events = await traced_run(settings, embedder)
        spans = collector.wait_for("invoke_workflow")
    tests = [e for e in events if isinstance(e, ev.TestRun)]
    tools = [s for s in spans if s.name == "execute_tool run_tests"]
    assert tests and len(tools) == len(tests)
    assert [t.attributes["swarm.test.passed"] for t in tools] == [e.passed for e in tests]
    assert all(t.attributes["gen_ai.tool.name"] == "run_tests" for t in tools)
    root = next(s for s in spans if not s.parent_id)
    assert root.attributes["swarm.problem"] == DEMO_PROBLEMS["code"]
    replies = [s.attributes.get("gen_ai.output.messages", "") for s in spans if s.name.startswith("chat ")]
    assert replies and all(replies)
    assert finished.final_answer and root.attributes["swarm.final_answer"] == finished.final_answer


async def test_a_dead_collector_costs_one_notice_and_the_run_goes_on(embedder: Any) -> None:
    with OtlpReceiver() as collector:
        dead = collector.url  # closed when the block ends: nothing listens there any more
    settings = Settings(max_rounds=3, otel_endpoint=dead)
    # Streamed slowly, the run outlasts the exporter's first batches (sent each second): they fail meanwhile.
    finished, events = await traced_run(settings, embedder, delay=0.02)
    plain, _ = await traced_run(replace(settings, otel_endpoint=None), embedder)
    assert finished.reason == plain.reason and finished.final_answer == plain.final_answer
    said = [e for e in events if isinstance(e, ev.Notice) and "trace collector" in e.message]
    assert len(said) == 1 and dead in said[0].message
    assert events[-1] is finished


def test_the_standard_variables_turn_tracing_on_and_off() -> None:
    settings = Settings()
    assert trace_target(settings, {}) is None
    on = trace_target(settings, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SERVICE_NAME": "lab"})
    assert on is not None and on.endpoint == "http://127.0.0.1:4318/v1/traces" and on.service == "lab"
    only = trace_target(settings, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9/x"})
    assert only is not None and only.endpoint == "http://127.0.0.1:9/x" and not only.capture_content
    assert trace_target(settings, {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1"}) is None
    flag = trace_target(replace(settings, otel_endpoint="http://127.0.0.1:4318/"), {})
    assert flag is not None and flag.endpoint == "http://127.0.0.1:4318/v1/traces"


def test_a_run_without_tracing_loads_no_opentelemetry() -> None:
    script = (
        "import asyncio, sys\n"
        "from core.compose.assembly import RunIO, open_run\n"
        "from core.compose.plan import BackendChoice, RunPlan\n"
        "from core.runtime.config import Settings\n"
        "async def main():\n"
        "    io = RunIO(backend=BackendChoice(demo=True))\n"
        "    async with open_run(RunPlan.make(Settings(strategy='single')), 'Write add(a, b).', io) as run:\n"
        "        await run.run()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
