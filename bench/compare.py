"""A comparison's cost in memory and time (issue 26, item 15).

Memory: the peak resident set of ``swarm-tui compare --demo --headless`` over four methods against the peak
of a single ``--headless --demo`` run of each of them, all in fresh processes (os.wait4's ru_maxrss).
Target: the comparison peaks at no more than 1.3x the heaviest single run, because the methods share one
process, one backend and one MiniLM.

Time: the same four methods against a scripted server that waits LATENCY seconds before every reply (a
slow model), with ``--parallel 4`` and ``--parallel 1``. Target: run at once, the comparison takes close to
its slowest method's time, not the sum of them.

    .venv/bin/python bench/compare.py [--latency 0.3] [--methods dytopo,dmoa,topoweaver,topodim]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MEMORY_BOUND = 1.3


def peak_rss_mb(args: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """(peak resident MB, exit code, stdout) of one fresh ``swarm-tui`` process."""
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen([sys.executable, "-m", "tui", *args], stdout=out, stderr=subprocess.DEVNULL,
                                env=env, cwd=env["BENCH_CWD"])
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return usage.ru_maxrss / 1024, proc.returncode, out.read()


def summary_of(stdout: str) -> dict:
    last = [line for line in stdout.splitlines() if line.strip()][-1]
    data = json.loads(last)
    assert data["type"] == "compare_summary", last[:200]
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="dytopo,dmoa,topoweaver,topodim")
    parser.add_argument("--domain", default="math")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds the server waits before each reply")
    args = parser.parse_args()
    methods = args.methods.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "SWARM_TUI_SESSIONS_DIR": tmp, "HF_HUB_OFFLINE": "1", "BENCH_CWD": tmp,
               "PYTHONPATH": str(ROOT)}
        singles = {}
        for method in methods:
            rss, code, _ = peak_rss_mb(["--headless", "--demo", "--domain", args.domain, "--strategy", method], env)
            singles[method] = rss
            print(f"single demo run, {method:<11} peak {rss:6.0f} MB (exit {code})")
        rss, code, _ = peak_rss_mb(["compare", "--demo", "--headless", "--json", "--domain", args.domain,
                                      "--strategy", args.methods], env)
        heaviest = max(singles.values())
        ratio = rss / heaviest
        print(f"comparison of {len(methods)} methods  peak {rss:6.0f} MB (exit {code}): {ratio:.2f}x the heaviest "
              f"single run, {rss / singles[methods[0]]:.2f}x {methods[0]} alone "
              f"-> {'PASS' if ratio <= MEMORY_BOUND else 'FAIL'} (target <= {MEMORY_BOUND}x)")

        from core.demo.behaviour import ServerBehaviour
        from core.demo.scripts import demo_script
        from core.demo.server import ScriptedServer

        with ScriptedServer(demo_script, ServerBehaviour(latency=args.latency)) as server:
            walls = {}
            for parallel in (len(methods), 1):
                t0 = time.perf_counter()
                result = subprocess.run(
                    [sys.executable, "-m", "tui", "compare", "--headless", "--json", "--domain", args.domain,
                     "--strategy", args.methods, "--base-url", server.base_url, "--parallel", str(parallel),
                     "--max-concurrency", "16", "What is 17*23?"],
                    capture_output=True, text=True, env={**env, "OPENAI_API_KEY": "bench"}, cwd=tmp, timeout=900,
                )
                walls[parallel] = time.perf_counter() - t0
                rows = summary_of(result.stdout)["rows"]
                per_method = {r["method"]: r["wall_s"] for r in rows}
                print(f"--parallel {parallel}: {walls[parallel]:.1f} s in all (process included); methods "
                      + ", ".join(f"{m} {w:.1f} s" for m, w in per_method.items()))
                if parallel == len(methods):
                    slowest, total = max(per_method.values()), sum(per_method.values())
            print(f"at once: {walls[len(methods)]:.1f} s against the slowest method's {slowest:.1f} s "
                  f"({walls[len(methods)] / slowest:.2f}x) and the sum of all {total:.1f} s "
                  f"({walls[len(methods)] / total:.2f}x); one after another: {walls[1]:.1f} s")
    return 0 if ratio <= MEMORY_BOUND else 1


if __name__ == "__main__":
    raise SystemExit(main())
