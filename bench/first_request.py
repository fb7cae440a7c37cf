"""Start-up and exit: how soon `swarm-tui --headless` sends its first model request, and how soon it exits
after the last reply.

A scripted OpenAI-compatible server (0.3 s before each reply, as in the comparison the issue reports)
runs in this process and notes when each chat request arrives and when each reply has been sent; the
app runs as a real subprocess (`swarm-tui --headless`, a 3-round code run). For scale, the same run
measures how long loading MiniLM takes in a fresh process: the time a first request would wait if it
waited for the model.

    python bench/first_request.py [--runs 3]
Targets: first request within 0.1 s (MARGIN_S) of the floor, a fresh interpreter importing only the
openai SDK, measured in the same run; exit promptly after the last reply.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.demo.behaviour import ServerBehaviour  # noqa: E402
from core.demo.scripts import demo_script  # noqa: E402
from core.demo.server import ScriptedServer  # noqa: E402
from core.runtime.scripted import RequestInfo  # noqa: E402

COMMAND = [sys.executable, "-m", "tui", "--headless", "--max-rounds", "3"]


MARGIN_S = 0.1  # one goal, one line: launch -> first request at most this much above the floor

def one_run(tmp: Path) -> tuple[float, float, float]:
    """(launch -> first chat request, last reply -> process exit, whole run) in seconds."""
    arrivals: list[float] = []
    lock = threading.Lock()

    def script(info: RequestInfo) -> str:
        with lock:
            arrivals.append(time.perf_counter())
        return demo_script(info)

    with ScriptedServer(script, ServerBehaviour(latency=0.3)) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        start = time.perf_counter()
        done = subprocess.run(
            [*COMMAND, "--base-url", server.base_url, "--save", str(tmp / "run.json"), "Write add(a, b)."],
            cwd=tmp, env=env, capture_output=True, text=True, check=False,
        )
        end = time.perf_counter()
    if done.returncode != 0 or not arrivals:
        raise SystemExit(f"the run failed ({done.returncode}): {done.stderr[-400:]}")
    # The last reply leaves about 0.3 s (latency) plus its streaming after the last request arrived.
    last_reply = arrivals[-1] + 0.3
    return arrivals[0] - start, end - last_reply, end - start


def minilm_load_seconds() -> float:
    code = "import time,sys; t=time.perf_counter(); from core.llm.embeddings import Embedder; Embedder().load(); " \
           "print(time.perf_counter()-t)"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def openai_import_seconds() -> float:
    """The floor: a fresh interpreter that only imports the openai SDK, which every request needs."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import openai"], check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    firsts, exits, walls = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.runs):
            first, exit_, wall = one_run(Path(folder))
            firsts.append(first)
            exits.append(exit_)
            walls.append(wall)
    load = minilm_load_seconds()
    floor = statistics.median(openai_import_seconds() for _ in range(3))
    load1 = os.getloadavg()[0]
    print(f"{args.runs} runs, 3-round code run, scripted server at 0.3 s per reply; load average {load1:.2f}")
    print(f"launch -> first request: p50 {statistics.median(firsts):.2f} s (runs: "
          + ", ".join(f"{x:.2f}" for x in firsts) + ")")
    print(f"last reply -> exit:      p50 {statistics.median(exits):.2f} s")
    print(f"whole run:               p50 {statistics.median(walls):.2f} s")
    print(f"MiniLM load in a fresh process (what a first request would wait for): {load:.2f} s")
    print(f"floor: a fresh interpreter importing only the openai SDK: {floor:.2f} s "
          f"(first request / floor = {statistics.median(firsts) / floor:.2f})")
    first = statistics.median(firsts)
    verdict = "PASS" if first <= floor + MARGIN_S else "FAIL"
    print(f"first request {first:.2f} s <= floor {floor:.2f} s + {MARGIN_S} s: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
