"""Benchmark: opening a saved session and re-routing it.

Builds a synthetic 10-round, 6-agent session at realistic sizes (384-d embeddings, 1-2 KB outputs,
graphs from the real routing function), saves it, then times
  * open    = load_session (read + validate + derive) + replay_events   target <= 300 ms
  * what-if = reroute_session over every round                           target <= 50 ms
and prints p50/p95 and PASS/FAIL. Run: .venv/bin/python bench/replay.py [--repeat N]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.routing.dytopo import route
from core.runtime import events as ev
from core.sessions.model import Session, session_from_events
from core.sessions.store import load_session, save_session
from core.sessions.whatif import reroute_session

ROUNDS, DIM = 10, 384
WORKERS = ["Developer", "Researcher", "Tester", "Designer", "Reviewer", "Planner"]
OPEN_TARGET_MS, WHATIF_TARGET_MS = 300.0, 50.0
PARAMS = {"tau": 0.3, "k_in": 3, "max_rounds": ROUNDS}
# Plain strings, not the enums: the script also measures older checkouts, which have none (their values equal these).
RUN_KIND: dict[str, Any] = {"domain": "code", "protocol": "phased"}
DONE: dict[str, Any] = {"status": "done"}
BY_MANAGER: dict[str, Any] = {"reason": "manager"}


def _text(rng: random.Random, low: int, high: int) -> str:
    words = ["routing", "graph", "palindrome", "edge", "test", "fix", "the", "agent", "score", "round", "code"]
    out: list[str] = []
    size, target = 0, rng.randint(low, high)
    while size < target:
        word = rng.choice(words)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def synthetic_session(seed: int = 7) -> Session:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    t = 1_790_000_000.0
    tokens = [0, 0]

    def tick() -> float:
        nonlocal t
        t += 0.05
        return t

    events: list[ev.Event] = [
        ev.RunStarted(
            ts=tick(), run_id="bench", problem=_text(rng, 300, 600), **RUN_KIND, manager="Manager",
            workers=WORKERS, roles={n: _text(rng, 80, 160) for n in ["Manager", *WORKERS]},
            strategy="dytopo", model="bench-model", base_url="http://127.0.0.1:1/v1", demo=True, params=PARAMS,
        )
    ]

    def finished(round_no: int, agent: str, call: str, public: str, query: str = "", key: str = "") -> None:
        p, c = rng.randint(800, 3000), rng.randint(200, 600)
        tokens[0] += p
        tokens[1] += c
        events.append(ev.AgentStarted(ts=tick(), round=round_no, agent=agent, call=call))
        events.append(
            ev.AgentFinished(
                ts=tick(), round=round_no, agent=agent, call=call, **DONE, public=public,
                private={"Tester": _text(rng, 60, 200)}, query=query, key=key, raw=public + "\n{json...}",
                prompt_tokens=p, completion_tokens=c, latency_s=round(rng.uniform(0.5, 4.0), 4),
            )
        )

    goal = _text(rng, 100, 200)
    for r in range(1, ROUNDS + 1):
        events.append(ev.RoundStarted(ts=tick(), round=r, params=PARAMS))
        if r == 1:
            finished(r, "Manager", ev.CallKind.PLAN, _text(rng, 200, 400))
            events.append(
                ev.ManagerDecided(ts=tick(), round=r, terminate=False, next_goal=goal, reasoning="", plan=True)
            )
            for name in WORKERS:
                finished(r, name, ev.CallKind.WORK, _text(rng, 1000, 2000))
            deliveries = [
                {"src": s, "dst": d, "score": None, "content": _text(rng, 1000, 2000)}
                for d in WORKERS for s in WORKERS if s != d
            ]
            events.append(ev.MessagesRouted(ts=tick(), round=r, deliveries=deliveries, broadcast=True))
        else:
            descriptors = {n: {"query": _text(rng, 60, 120), "key": _text(rng, 60, 120)} for n in WORKERS}
            for name in WORKERS:
                finished(r, name, ev.CallKind.DESCRIPTORS, "", descriptors[name]["query"], descriptors[name]["key"])
            events.append(ev.DescriptorsReady(ts=tick(), round=r, descriptors=descriptors))
            q = nrng.normal(size=(len(WORKERS), DIM)) + 0.6
            k = nrng.normal(size=(len(WORKERS), DIM)) + 0.6
            q /= np.linalg.norm(q, axis=1, keepdims=True)
            k /= np.linalg.norm(k, axis=1, keepdims=True)
            routing = route(WORKERS, q, k, PARAMS["tau"], PARAMS["k_in"])
            events.append(
                ev.TopologyBuilt(
                    ts=tick(), round=r, routing=routing.to_dict(),
                    query_embeddings=q.astype(np.float32).astype(float).tolist(),
                    key_embeddings=k.astype(np.float32).astype(float).tolist(),
                )
            )
            for name in routing.order:
                finished(r, name, ev.CallKind.WORK, _text(rng, 1000, 2000))
            deliveries = [
                {"src": e.src, "dst": e.dst, "score": e.score, "content": _text(rng, 1000, 2000)} for e in routing.edges
            ]
            events.append(ev.MessagesRouted(ts=tick(), round=r, deliveries=deliveries))
        finished(r, "Manager", ev.CallKind.MANAGER, _text(rng, 300, 600))
        last = r == ROUNDS
        goal = _text(rng, 100, 200)
        reasoning = _text(rng, 200, 400)
        events.append(ev.ManagerDecided(ts=tick(), round=r, terminate=last, next_goal=goal, reasoning=reasoning))
        events.append(ev.RoundFinished(ts=tick(), round=r, prompt_tokens=tokens[0], completion_tokens=tokens[1]))
    events.append(
        ev.RunFinished(
            ts=tick(), **BY_MANAGER, detail="done", final_answer=_text(rng, 1000, 2000), answer_source="manager",
            rounds=ROUNDS, prompt_tokens=tokens[0], completion_tokens=tokens[1],
        )
    )
    return session_from_events(events)


def _time(fn: Callable[[], object], repeat: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU milliseconds per call (CPU time shows the cost when other processes
    compete for the cores)."""
    fn()  # warm-up: imports and caches
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return wall, cpu


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _report(label: str, samples: tuple[list[float], list[float]], target: float | None) -> bool:
    """PASS/FAIL is judged on the wall-clock p95."""
    wall, cpu = samples
    p50, p95 = statistics.median(wall), _pct(wall, 0.95)
    verdict = "" if target is None else ("  PASS" if p95 <= target else "  FAIL")
    bound = "" if target is None else f"  (target <= {target:.0f} ms)"
    print(
        f"{label:<26} wall p50 {p50:7.1f} p95 {p95:7.1f} ms | cpu p50 {statistics.median(cpu):7.1f} "
        f"p95 {_pct(cpu, 0.95):7.1f} ms{bound}{verdict}"
    )
    return target is None or p95 <= target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    session = synthetic_session()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        json_path = save_session(session, Path(tmp) / "bench.json")
        toml_path = save_session(session, Path(tmp) / "bench.toml")
        assert load_session(json_path) == session == load_session(toml_path)
        n_events = len(session.events)
        print(
            f"session: {ROUNDS} rounds, {len(WORKERS)} agents, {DIM}-d embeddings, {n_events} events; "
            f"JSON {json_path.stat().st_size / 1e6:.2f} MB, TOML {toml_path.stat().st_size / 1e6:.2f} MB"
        )
        ok &= _report("open JSON (load+replay)", _time(lambda: load_session(json_path).replay_events(), args.repeat),
                      OPEN_TARGET_MS)
        _report("open TOML (load+replay)", _time(lambda: load_session(toml_path).replay_events(), args.repeat), None)
        _report("save JSON", _time(lambda: save_session(session, json_path), args.repeat), None)
    # A different (tau, k_in) every time, as when a user drags the slider (similarities here are
    # 0.1-0.45, so most of the grid keeps edges) ...
    grid = itertools.cycle([(tau / 100, k) for tau in range(10, 45, 5) for k in (1, 2, 3, 5)])
    ok &= _report("what-if all rounds", _time(lambda: reroute_session(session, *next(grid)), args.repeat),
                  WHATIF_TARGET_MS)
    # ... and the worst case: every pair connected, k_in 5, the most cycles to break.
    ok &= _report("what-if worst (tau 0, k 5)", _time(lambda: reroute_session(session, 0.0, 5), args.repeat),
                  WHATIF_TARGET_MS)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
