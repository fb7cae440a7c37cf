"""TUI streaming: N agents (six by default) each streaming 100 chunks/s for 20 s into the headless app.

The text comes from the scripted server (run in a child process, so the CPU figure is the app's own)
through the real openai client, as AgentDelta events through the EventBridge into the run screen,
exactly the path a live run takes. Reported: whether every agent's whole text ended up in its pane,
the event loop's lag (p50/p95/max of a 10 ms ticker), and CPU use of the app process in cores.

Targets: all text in the panes, lag p95 <= 50 ms, CPU < 1 core, with 6 agents and with a team of 16
(issue 14: ``--agents 16``, 1,600 chunks a second in all).

``--compare M`` streams into the compare screen instead: M methods side by side, each with ``--agents``
agents streaming at once through its own bridge (issue 26: four methods streaming, the same targets).

    .venv/bin/python bench/tui_stream.py [--agents 6] [--rate 100] [--seconds 20]
    .venv/bin/python bench/tui_stream.py --compare 4 --agents 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.runtime import events as ev
from core.runtime.config import Settings

CHUNK = 16
# Plain strings, not the enums: older checkouts have none (their values equal these).
RUN_KIND: dict[str, Any] = {"domain": "code", "protocol": "phased"}
RUNNING: dict[str, Any] = {"state": "running"}
REPLY_TOKENS = 1_000_000  # the bench streams a reply of its own length, never a cut-off one
T = TypeVar("T")


def content_for(agent: str, chunks: int) -> str:
    """A JSON reply of about ``chunks`` chunks, with newlines and quotes like a real one."""
    lines, size, i = [], 0, 0
    while size < chunks * CHUNK - 40:
        line = f'{agent} line {i}: "quoted" text, code `x = {i}` and more words to wrap'
        lines.append(line)
        size += len(json.dumps(line)) - 2 + 2
        i += 1
    return json.dumps({"public": "\n".join(lines), "query": "q", "key": "k"})


def serve(agents: int, rate: float, seconds: float) -> None:
    """Child process: the scripted server, each reply the agent's long content, paced at ``rate``."""
    from core.demo.behaviour import ServerBehaviour
    from core.demo.server import ScriptedServer

    chunks = int(rate * seconds)

    def script(info) -> str:  # type: ignore[no-untyped-def]
        return content_for(info.role, chunks)

    server = ScriptedServer(script, ServerBehaviour(chunk_chars=CHUNK, chunk_delay=1.0 / rate)).start()
    print(server.base_url, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    server.stop()


async def ticker(stop: asyncio.Event, lags: list[float]) -> None:
    """The event loop's lag: how late a 10 ms sleep wakes, until ``stop``."""
    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(0.01)
        lags.append(time.perf_counter() - t0 - 0.01)


def figures(ok: bool, chunks: int, wall: float, cpu: float, lags: list[float]) -> dict[str, float | bool]:
    lags.sort()
    return {
        "all_text_in_panes": ok,
        "chunks_per_agent": chunks,
        "wall_s": wall,
        "lag_p50_ms": 1000 * statistics.median(lags),
        "lag_p95_ms": 1000 * lags[int(0.95 * (len(lags) - 1))],
        "lag_max_ms": 1000 * lags[-1],
        "cpu_cores": cpu / wall,
    }


async def stream_work(client: Any, bridge: Callable[[Any], None], name: str) -> str:
    """One agent's work call, its deltas fed to the screen through ``bridge`` as a live run feeds them."""
    from core.llm.call_id import CallId

    bridge(ev.AgentStarted(round=1, agent=name, call="work"))
    result = await client.chat(
        # max_tokens covers the whole reply: the client cuts a stream that runs past it (core.llm.bounds).
        [{"role": "user", "content": "Work on the task."}], temperature=0, max_tokens=REPLY_TOKENS,
        call_id=CallId(name, "work", 1),
        on_delta=lambda text: bridge(ev.AgentDelta(round=1, agent=name, call="work", text=text)),
    )
    return str(result.text)


async def timed(pilot: Any, client: Any, streams: list[Awaitable[T]],
                last_frame: float) -> tuple[list[T], float, float, list[float]]:
    """(results, wall s, CPU s, event-loop lags) of running ``streams`` at once and drawing the last frame;
    the client is closed after."""
    lags: list[float] = []
    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(stop, lags))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    results = await asyncio.gather(*streams)
    await pilot.pause(last_frame)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    stop.set()
    await tick
    await client.close()
    return list(results), wall, cpu, lags


async def bench(base_url: str, agents: int, rate: float, seconds: float) -> dict[str, float | bool]:
    from core.llm.client import LLMClient
    from tui.app import SwarmApp
    from tui.bridge import EventBridge
    from tui.cli.launch import OpenRun
    from tui.streamtext import display_text
    from tui.widgets.agent_pane import AgentPane

    names = [f"Agent{i}" for i in range(agents)]
    app = SwarmApp(OpenRun("streaming bench", Settings(sessions_dir="/nonexistent")), state_path=None,
                   load_embedder=False, start_engine=False)
    async with app.run_test(size=(200, 60), headless=True) as pilot:
        bridge = EventBridge(app)
        bridge(ev.RunStarted(run_id="bench", problem="streaming bench", **RUN_KIND, manager=names[0],
                             workers=names[1:], roles={}, strategy="dytopo", model="bench",
                             base_url=base_url, demo=True, params={"tau": 0.3, "k_in": 3, "max_rounds": 5}))
        bridge(ev.RoundStarted(round=1, params={"tau": 0.3, "k_in": 3, "max_rounds": 5}))
        await pilot.pause(0.3)
        client = LLMClient(base_url, "bench", "bench", max_concurrency=agents, timeout=60)
        texts, wall, cpu, lags = await timed(pilot, client, [stream_work(client, bridge, n) for n in names], 0.3)
        ok = True
        for name, raw in zip(names, texts, strict=True):
            expected = display_text(raw)
            shown = app.swarm_screen.query_one(f"#agent-{name}", AgentPane).copy_text()
            ok = ok and shown == expected and len(raw) >= rate * seconds * CHUNK * 0.9
        return figures(ok, round(len(texts[0]) / CHUNK), wall, cpu, lags)


async def bench_compare(base_url: str, methods: int, agents: int, rate: float,
                        seconds: float) -> dict[str, float | bool]:
    """The same streams into the compare screen: ``methods`` columns, ``agents`` streaming agents each."""
    from core.llm.client import LLMClient
    from core.sessions.compare_record import CompareRecord, CompareRow
    from tui.app import SwarmApp
    from tui.opening import OpenScreen
    from tui.screens.compare import CompareScreen, MethodBridge
    from tui.streamtext import display_text

    labels = ["dytopo", "dmoa", "topoweaver", "topodim", "single", "random", "chain", "star", "broadcast",
              "single-turn"][:methods]
    record = CompareRecord(problem="streaming bench", domain=RUN_KIND["domain"], model="bench",
                           base_url=base_url, demo=True, rows=[CompareRow(m, **RUNNING) for m in labels])
    app = SwarmApp(OpenScreen(lambda: CompareScreen(record), settings=Settings(sessions_dir="/nonexistent")),
                   state_path=None, load_embedder=False)
    async with app.run_test(size=(160, 48), headless=True) as pilot:
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        names = [f"Agent{i}" for i in range(agents)]
        bridges = {m: MethodBridge(screen, m) for m in labels}
        for method, bridge in bridges.items():
            bridge(ev.RunStarted(run_id=method, problem="streaming bench", **RUN_KIND, manager="", workers=names,
                                 roles={}, strategy=method, model="bench", base_url=base_url,
                                 demo=True, params={"tau": 0.3, "k_in": 1, "max_rounds": 5}))
            bridge(ev.RoundStarted(round=1, params={"tau": 0.3, "k_in": 1, "max_rounds": 5}))
        await pilot.pause(0.3)
        client = LLMClient(base_url, "bench", "bench", max_concurrency=methods * agents, timeout=60)
        pairs = [(m, n) for m in labels for n in names]
        texts, wall, cpu, lags = await timed(pilot, client, [stream_work(client, bridges[m], n) for m, n in pairs], 0.5)
        ok = True
        for (method, name), raw in zip(pairs, texts, strict=True):
            view = screen.columns[method].model.rounds[1].agents[name]
            ok = ok and view.text == display_text(raw) and len(raw) >= rate * seconds * CHUNK * 0.9
        return figures(ok, round(len(texts[0]) / CHUNK), wall, cpu, lags)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=6)
    parser.add_argument("--rate", type=float, default=100.0, help="chunks per second per agent")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--compare", type=int, default=0, metavar="M",
                        help="stream into the compare screen: M methods, --agents streaming agents each")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.agents, args.rate, args.seconds)
        return 0
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--agents", str(args.agents), "--rate", str(args.rate),
         "--seconds", str(args.seconds)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ},
    )
    try:
        assert child.stdout is not None
        base_url = child.stdout.readline().strip()
        if args.compare:
            result = asyncio.run(bench_compare(base_url, args.compare, args.agents, args.rate, args.seconds))
        else:
            result = asyncio.run(bench(base_url, args.agents, args.rate, args.seconds))
    finally:
        if child.stdin:
            child.stdin.close()
        child.wait(timeout=10)
    where = f"compare screen, {args.compare} methods x " if args.compare else ""
    print(f"{where}{args.agents} agents x {args.rate:g} chunks/s x {args.seconds:g} s "
          f"({result['chunks_per_agent']} chunks each) in {result['wall_s']:.1f} s")
    print(f"all text in the panes: {'yes' if result['all_text_in_panes'] else 'NO'}")
    print(f"event-loop lag: p50 {result['lag_p50_ms']:.1f} ms, p95 {result['lag_p95_ms']:.1f} ms "
          f"(target <= 50), max {result['lag_max_ms']:.1f} ms")
    print(f"CPU: {result['cpu_cores']:.2f} cores (target < 1)")
    good = result["all_text_in_panes"] and result["lag_p95_ms"] <= 50 and result["cpu_cores"] < 1
    return 0 if good else 1


if __name__ == "__main__":
    raise SystemExit(main())
