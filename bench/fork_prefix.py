"""Fork prefix: how much of a fork's first request of each agent a server that still holds the parent's
conversation can reuse (issue 46: "what-if and fork rebuild the same conversations").

Scripted tier (no model; the scripted server on 127.0.0.1, the demo's replies): per method a parent run, then a
fork from round (step, turn) k, and for every agent the parent had called by round k and the fork calls again:

* continued: agents whose fork's first request begins with one of the parent's requests of that agent plus the
  reply it got, byte for byte (a live continuation's layout: the last request whose reply was kept), of the
  agents both runs called;
* reusable: the share of those first requests' characters (rendered one block per message, as a chat template
  lays them out) that are a prefix of such a parent request plus its reply (the longest): what the agent's
  server slot, or a prefix cache, still holds.

Run it on this checkout, and on another for the figures before (its modules first on the path):

    PYTHONPATH=. python bench/fork_prefix.py
    PYTHONPATH=/path/to/other/checkout python bench/fork_prefix.py
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.llm.embeddings import shared_embedder
from core.methods.topoweaver.demo import topoweaver_script
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.engine import ForkPoint
from core.sessions.fork import fork_point
from core.sessions.model import session_from_events

Request = tuple[str, str, int, list[dict[str, Any]]]  # (agent, call, round, messages)


def same_two(info: Any) -> str:
    """The demo, except that DMoA's Selector picks the Developer and the Tester at every step."""
    if info.call == "dmoa-select":
        return json.dumps({"agents": ["Developer", "Tester"], "weights": {"Developer": 0.6, "Tester": 0.4}})
    return demo_script(info)


CASES = [  # (name, settings, script, fork after round k)
    ("dytopo phased", Settings(domain="code", strategy="dytopo"), demo_script, 2),
    ("dmoa (llm router)", Settings(domain="code", strategy="dmoa", strategy_options={"dmoa": {"router": "llm"}}),
     same_two, 2),
    ("topoweaver", Settings(domain="code", strategy="topoweaver", max_retries=0), topoweaver_script, 1),
]


def rendered(messages: list[dict[str, Any]]) -> str:
    return "".join(f"<|{m.get('role', '')}|>\n{m.get('content', '')}\n" for m in messages)


def common_prefix(a: str, b: str) -> int:
    n, i = min(len(a), len(b)), 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


async def run(settings: Settings, script: Any, embedder: Any, fork: ForkPoint | None = None
              ) -> tuple[list[Request], list[ev.Event]]:
    events: list[ev.Event] = []
    with ScriptedServer(script) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        try:
            engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [events.append], embedder=embedder,
                                  fork=fork)
            await engine.run()
        finally:
            await backend.close()
        requests = [(r.role, r.call, r.round, list(r.messages)) for r in server.requests if r.role and not r.is_repair]
    return requests, events


def measure(parent: list[Request], events: list[ev.Event], forked: list[Request], at: int) -> dict[str, int]:
    kept = {(e.agent, e.call, e.round): e.raw for e in events if isinstance(e, ev.AgentFinished) and e.raw}
    figures = {"agents": 0, "continued": 0, "chars": 0, "prefix": 0}
    for agent in dict.fromkeys(a for a, *_ in forked):
        # Each of the agent's parent requests with its reply: the one the fork continues may not be the last
        # (a side request, e.g. DyTopo's Manager review, is not kept).
        held = [[*messages, {"role": "assistant", "content": kept.get((agent, call, round_no), "")}]
                for who, call, round_no, messages in parent if who == agent and round_no <= at]
        if not held:
            continue
        first = next(r[3] for r in forked if r[0] == agent)
        text = rendered(first)
        figures["agents"] += 1
        figures["continued"] += any(first[:len(h)] == h for h in held)
        figures["chars"] += len(text)
        figures["prefix"] += max(common_prefix(rendered(h), text) for h in held)
    return figures


async def main() -> None:
    embedder = shared_embedder()
    embedder.load()
    print(f"{'method':<20} {'fork at':>7} {'continued':>10} {'reusable':>9}")
    for name, settings, script, at in CASES:
        parent, events = await run(settings, script, embedder)
        point = fork_point(session_from_events(events), at, "parent.json")
        forked, _ = await run(settings, script, embedder, point)
        f = measure(parent, events, forked, at)
        share = f["prefix"] / f["chars"] if f["chars"] else 0.0
        print(f"{name:<20} {at:>7} {f['continued']:>4} of {f['agents']:<3} {share:>9.3f}")


if __name__ == "__main__":
    asyncio.run(main())
