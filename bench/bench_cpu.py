"""The app's CPU per LLM call during a benchmark sweep on the oracle server (issue 24, item 13).

The scripted oracle server (it answers every problem from its reference solution) runs in a child
process, so its CPU is not counted. This process runs `swarm-tui bench` in-process: HumanEval x
methods x repeats at the given concurrency, and prints the app's CPU (user + system, its own and its
finished children's, i.e. the sandbox checking the code) divided by the model calls the runs made.
Imports and the embedding model are loaded before the clock starts (a one-off cost, not per call).

    .venv/bin/python bench/bench_cpu.py [--limit 164] [--methods dytopo,single,random] [--repeats 2]
                                        [--concurrency 8] [--dataset core/datasets/data/humaneval.jsonl]

Target: <= 20 ms of CPU per call (the figure before issue 24).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DATASET = Path(__file__).resolve().parents[1] / "core" / "datasets" / "data" / "humaneval.jsonl"
TARGET_MS = 20.0


def _serve(dataset: str, pipe: object) -> None:
    """The oracle server in its own process; it sends its URL, then serves until terminated."""
    from core.datasets.loader import load_dataset
    from core.demo.bench_script import benchmark_script
    from core.demo.server import ScriptedServer

    server = ScriptedServer(benchmark_script(load_dataset(Path(dataset)).problems)).start()
    pipe.send(server.base_url)  # type: ignore[attr-defined]
    while True:
        time.sleep(3600)


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # finished children only: the sandbox runs
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--limit", type=int, default=164)
    parser.add_argument("--methods", default="dytopo,single,random")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.get_context("spawn").Process(target=_serve, args=(str(args.dataset), send), daemon=True)
    server.start()
    url = receive.recv()

    from core.llm.embeddings import shared_embedder
    from tui.cli.bench import main as _bench_main  # noqa: F401  (imported before the clock)
    from tui.entry import main as cli_main

    shared_embedder(None).load()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        argv = [
            "bench", str(args.dataset), "--out", str(out), "--limit", str(args.limit), "--strategy", args.methods,
            "--repeats", str(args.repeats), "--concurrency", str(args.concurrency), "--base-url", url,
            "--max-concurrency", "16",
        ]
        cpu0, wall0 = _cpu(), time.perf_counter()
        code = cli_main(argv)
        cpu, wall = _cpu() - cpu0, time.perf_counter() - wall0
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    server.terminate()
    calls = sum(r["calls"] for r in rows)
    solved = sum(r["correct"] for r in rows)
    print(
        f"\nbench exit {code}: {len(rows)} runs ({args.limit} problems x {args.methods} x {args.repeats} repeats, "
        f"concurrency {args.concurrency}), {solved} solved, {calls} model calls"
    )
    print(f"wall {wall:.1f} s, app CPU {cpu:.1f} s (incl. report + sandbox children)")
    per_call = 1000 * cpu / max(calls, 1)
    verdict = "OK" if per_call <= TARGET_MS else "ABOVE TARGET"
    print(f"app CPU per LLM call: {per_call:.1f} ms (target <= {TARGET_MS:.0f} ms) {verdict}")
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
