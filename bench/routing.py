"""Routing latency: embed 2N descriptors with real MiniLM (CPU) + route(), for N = 4, 6, 8 agents.

Target (issue 2): <= 60 ms at N = 6, judged on p95. Run: .venv/bin/python bench/routing.py [--reps 50]
This prints figures only; it is a script, not a timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere as a script

from core.llm.embeddings import Embedder
from core.routing.dytopo import route

TARGET_MS = 60.0
TARGET_N = 6

# Realistic one-sentence descriptors (the shape the prompts ask for), per role: (query, key).
DESCRIPTORS: list[tuple[str, str, str]] = [
    ("Developer", "I need the failing test cases and edge cases for make_palindrome.",
     "I provide the complete Python implementation of make_palindrome and is_palindrome."),
    ("Researcher", "I need the exact problem constraints and the function signature.",
     "I provide the algorithm: find the longest palindromic suffix and mirror the prefix."),
    ("Tester", "I need the Developer's implementation of make_palindrome to verify against these test cases.",
     "I provide unit tests for empty strings, single characters and already-palindromic input."),
    ("Designer", "I need the algorithm outline to design the helper functions.",
     "I provide the module structure: a helper is_palindrome and the main make_palindrome."),
    ("Analyst", "I need the list of requirements stated in the problem.",
     "I provide a breakdown of the requirements into checkable items."),
    ("Critic", "I need the draft solution to check for logical gaps.",
     "I provide a review of weaknesses and missing cases in the draft."),
    ("Synthesizer", "I need the reviewed parts to merge into one final answer.",
     "I provide the merged final solution text."),
    ("Verifier", "I need each derivation step of the solution to check it.",
     "I provide a step-by-step verification with the errors found."),
]  # fmt: skip


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def bench(embedder: Embedder, n: int, reps: int, warmup: int) -> tuple[list[float], list[float], list[float]]:
    roles = DESCRIPTORS[:n]
    full: list[float] = []
    route_only: list[float] = []
    cpu: list[float] = []  # process CPU time: less sensitive than wall time to other busy processes
    for rep in range(warmup + reps):
        # Nothing is cached between calls (sentence-transformers keeps no text cache), so the same
        # descriptors each repetition cost what new ones of the same length would; rotate the agents
        # anyway so the batch differs.
        turn = roles[rep % n :] + roles[: rep % n]
        texts = [q for _, q, _ in turn] + [k for _, _, k in turn]
        cpu_start = time.process_time()
        start = time.perf_counter()
        vectors = embedder.embed(texts)  # one batch of 2N: queries then keys
        middle = time.perf_counter()
        route([r[0] for r in turn], vectors[:n], vectors[n:], tau=0.3, k_in=3)
        end = time.perf_counter()
        cpu_end = time.process_time()
        if rep >= warmup:
            cpu.append((cpu_end - cpu_start) * 1000)
            full.append((end - start) * 1000)
            route_only.append((end - middle) * 1000)
    return full, route_only, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()

    embedder = Embedder()
    start = time.perf_counter()
    embedder.load()
    import torch  # already loaded by the embedder; only for the thread count

    print(f"model: {embedder.source}")
    print(f"load: {(time.perf_counter() - start) * 1000:.0f} ms (once per process)")
    print(
        f"reps: {args.reps} after {args.warmup} warm-up; torch threads: {torch.get_num_threads()}; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; times in ms"
    )
    print(f"{'N':>2}  {'embed+route p50':>15}  {'p95':>7}  {'route() p50':>11}  {'p95':>6}  {'CPU p50':>7}")
    verdict = True
    for n in (4, 6, 8):
        full, route_only, cpu = bench(embedder, n, args.reps, args.warmup)
        p50, p95 = statistics.median(full), percentile(full, 95)
        print(
            f"{n:>2}  {p50:>15.1f}  {p95:>7.1f}  {statistics.median(route_only):>11.2f}  "
            f"{percentile(route_only, 95):>6.2f}  {statistics.median(cpu):>7.1f}"
        )
        if n == TARGET_N:
            verdict = p95 <= TARGET_MS
            target_line = f"N={n}: p95 {p95:.1f} ms vs target <= {TARGET_MS:.0f} ms"
    print(f"{'PASS' if verdict else 'FAIL'}  {target_line} (load average now {os.getloadavg()[0]:.2f})")
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())
