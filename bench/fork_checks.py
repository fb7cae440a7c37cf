"""Fork checks: with code execution on, does a fork send what its parent sent next (issue 46: "what-if and fork
rebuild the same conversations")? The demo's Tester writes its tests in round 1 only, so a fork from round 1 is
right only if its check starts with the tests (and the code) the parent's agents wrote before the fork.

Scripted tier (no model; the scripted server on 127.0.0.1, the demo's replies): per method a parent run with the
code's check on, then a fork from round (step) k, and:

* same requests: of the fork's requests, those whose messages equal the parent's request of the same agent,
  call and round, byte for byte;
* same checks: of the fork's checks (TestRun), those whose outcome and detail equal the parent's of that round.

Run it on this checkout, and on another for the figures before (its modules first on the path):

    PYTHONPATH=. python bench/fork_checks.py
    PYTHONPATH=/path/to/other/checkout python bench/fork_checks.py
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from core.compose.assembly import make_evaluator
from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.llm.embeddings import shared_embedder
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.engine import ForkPoint
from core.sessions.fork import fork_point
from core.sessions.model import session_from_events

Key = tuple[str, str, int]  # (agent, call, round)


def same_two(info: Any) -> str:
    """The demo, except that DMoA's Selector picks the Developer and the Tester at every step."""
    if info.call == "dmoa-select":
        return json.dumps({"agents": ["Developer", "Tester"], "weights": {"Developer": 0.6, "Tester": 0.4}})
    return demo_script(info)


CASES = [  # (name, settings, script, fork after round k)
    ("dytopo phased", Settings(domain="code", execute_code=True, convergence_threshold=1.0), demo_script, 1),
    ("dytopo single-pass", Settings(domain="code", execute_code=True, convergence_threshold=1.0,
                                    protocol="single-pass"), demo_script, 1),
    ("dmoa (llm router)", Settings(domain="code", strategy="dmoa", execute_code=True,
                                   strategy_options={"dmoa": {"router": "llm"}}), same_two, 1),
]


async def run(settings: Settings, script: Any, embedder: Any, fork: ForkPoint | None = None
              ) -> tuple[dict[Key, Any], list[ev.Event]]:
    events: list[ev.Event] = []
    with ScriptedServer(script) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        try:
            engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [events.append], embedder=embedder,
                                  fork=fork, evaluator=make_evaluator(settings))
            await engine.run()
        finally:
            await backend.close()
        requests: dict[Key, Any] = {}
        for r in server.requests:
            if r.role and not r.is_repair:
                requests.setdefault((r.role, r.call, r.round), list(r.messages))
    return requests, events


def checks(events: list[ev.Event], after: int) -> dict[int, tuple[str, str]]:
    return {e.round: (e.outcome, e.detail) for e in events if isinstance(e, ev.TestRun) and e.round > after}


async def main() -> None:
    embedder = shared_embedder()
    embedder.load()
    print(f"{'method':<20} {'fork at':>7} {'same requests':>14} {'same checks':>12}")
    for name, settings, script, at in CASES:
        parent, events = await run(settings, script, embedder)
        point = fork_point(session_from_events(events), at, "parent.json")
        forked, fork_events = await run(settings, script, embedder, point)
        same = sum(parent.get(key) == messages for key, messages in forked.items())
        mine, theirs = checks(fork_events, at), checks(events, at)
        same_checks = sum(theirs.get(round_no) == check for round_no, check in mine.items())
        print(f"{name:<20} {at:>7} {same:>6} of {len(forked):<5} {same_checks:>5} of {len(mine):<4}")


if __name__ == "__main__":
    asyncio.run(main())
