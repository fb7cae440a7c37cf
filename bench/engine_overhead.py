"""Engine overhead: wall time of a whole run against its critical-path lower bound.

The scripted server answers every call after a fixed latency. A run can never be faster than the chain
of calls that must happen one after another: the Manager's plan, each parallel phase (its slowest call),
each tier of phase C in sequence, the Manager's decision. Two lower bounds are printed:

* measured: the sum, along that chain, of the call latencies the client itself measured in this run;
* nominal: the number of sequential steps times the server's fixed latency.

Target: wall / measured lower bound <= 1.05.

    .venv/bin/python bench/engine_overhead.py [--latency 0.25] [--runs 3] [--protocol phased]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.llm.embeddings import shared_embedder
from core.runtime import events as ev
from core.runtime.config import Settings

TARGET = 1.05


def critical_path(events: list[ev.Event]) -> tuple[float, int]:
    """(sum of the slowest call of each sequential step, number of steps) from one run's events.
    A step is (round, call kind, tier): phase C tiers run one after another, everything else in a
    call kind runs in parallel."""
    tiers = {(e.round, e.agent, e.call): e.tier or 0 for e in events if isinstance(e, ev.AgentStarted)}
    steps: dict[tuple[int, str, int], float] = defaultdict(float)
    for e in events:
        if isinstance(e, ev.AgentFinished):
            tier = tiers.get((e.round, e.agent, e.call), 0) if e.call == ev.CallKind.WORK and e.round > 1 else 0
            steps[(e.round, e.call, tier)] = max(steps[(e.round, e.call, tier)], e.latency_s)
    return sum(steps.values()), len(steps)


async def one_run(latency: float, protocol: str) -> tuple[float, float, int]:
    chosen: dict[str, Any] = {"protocol": protocol}  # a plain string: older checkouts have no RoundProtocol
    settings = Settings(**chosen, max_concurrency=8)
    with ScriptedServer(demo_script, ServerBehaviour(latency=latency)) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        recorded: list[ev.Event] = []
        engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [recorded.append])
        start = time.perf_counter()
        finished = await engine.run()
        wall = time.perf_counter() - start
        await backend.close()
    assert finished.reason == "manager", finished
    bound, steps = critical_path(recorded)
    return wall, bound, steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.25, help="server latency per call, seconds")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--protocol", default="phased", choices=("phased", "single-pass"))
    args = parser.parse_args()

    embedder = shared_embedder()
    t0 = time.perf_counter()
    embedder.load()
    print(f"MiniLM load (once, not part of a run): {time.perf_counter() - t0:.2f} s")
    ratios, nominal_ratios = [], []
    for index in range(args.runs):
        wall, bound, steps = asyncio.run(one_run(args.latency, args.protocol))
        nominal = steps * args.latency
        ratios.append(wall / bound)
        nominal_ratios.append(wall / nominal)
        print(
            f"run {index + 1}: wall {wall:.3f} s; measured lower bound {bound:.3f} s over {steps} sequential steps "
            f"(ratio {wall / bound:.3f}); nominal bound {nominal:.3f} s (ratio {wall / nominal:.3f})"
        )
    median = statistics.median(ratios)
    print(
        f"\n{args.protocol}, latency {args.latency:.2f} s: wall / measured lower bound = {median:.3f} (median of "
        f"{args.runs}); wall / nominal = {statistics.median(nominal_ratios):.3f}; target <= {TARGET}: "
        f"{'PASS' if median <= TARGET else 'FAIL'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
