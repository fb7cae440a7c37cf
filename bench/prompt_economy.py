"""Prompt economy: what a 3-round DyTopo code run sends the model, per call kind, before and after.

The same run (the demo's code problem, the code team, tau 0.3, k_in 3, 3 rounds, phased, on the
scripted server) is measured twice in one invocation: on this checkout and on a baseline revision
checked out into a temporary git worktree (default: the commit before the prompt economy work). Prints
prompt characters and estimated tokens per call kind, and the after/before ratio (target <= 0.70).
Every routed message and the problem still reach their recipients: the engine tests check that.

    python bench/prompt_economy.py [--baseline REV] [--protocol phased|single-pass]

Both memory rules are measured: the default, accumulate (DyTopo eq. 3), and the latest-message economy.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import baseline  # bench/baseline.py, beside this script

ROOT = baseline.ROOT
DEFAULT_BASELINE = "6a7b457"  # before the prompt economy changes (issue 16)


def measure(protocol: str, memory: str | None = None) -> dict[str, list[int]]:
    """{call kind: [calls, prompt characters]} for one run of this checkout (run in-process)."""
    from core.demo.scripts import demo_script

    options = {"dytopo": {"memory": memory}} if memory else {}
    kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for request in baseline.scripted_requests(demo_script, protocol=protocol, max_rounds=3, strategy_options=options):
        if not request.call:
            continue
        kinds[request.call][0] += 1
        kinds[request.call][1] += sum(len(str(m.get("content", ""))) for m in request.messages)
    return dict(kinds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision to compare against")
    parser.add_argument("--protocol", default="phased", choices=("phased", "single-pass"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.child:
        print(json.dumps(measure(args.protocol)))
        return 0
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as cwd:  # runs autosave into ./sessions: keep the checkout clean
        os.chdir(cwd)
        runs = {rule: measure(args.protocol, rule) for rule in ("accumulate", "latest")}
    before = baseline.measure_at(args.baseline, Path(__file__).resolve(), ["--protocol", args.protocol])
    for rule, after in runs.items():
        print(f"\n== -o memory={rule}" + (" (the default: DyTopo eq. 3)" if rule == "accumulate" else " (economy)"))
        table(args, before, after)
    return 0


def table(args: argparse.Namespace, before: dict[str, list[int]], after: dict[str, list[int]]) -> None:
    print(f"3-round code run, {args.protocol}, scripted server; baseline {args.baseline} vs this checkout")
    print(f"{'call kind':<13}{'calls':>6}{'chars before':>14}{'chars after':>13}{'tokens before':>15}"
          f"{'tokens after':>14}{'ratio':>7}")
    total_before = total_after = 0
    for kind in sorted(set(before) | set(after)):
        calls = after.get(kind, before.get(kind, [0, 0]))[0]
        b, a = before.get(kind, [0, 0])[1], after.get(kind, [0, 0])[1]
        total_before, total_after = total_before + b, total_after + a
        ratio = f"{a / b:.2f}" if b else "-"
        print(f"{kind:<13}{calls:>6}{b:>14,}{a:>13,}{b // 4:>15,}{a // 4:>14,}{ratio:>7}")
    ratio = total_after / total_before if total_before else 0.0
    print(f"{'all':<13}{'':>6}{total_before:>14,}{total_after:>13,}{total_before // 4:>15,}{total_after // 4:>14,}"
          f"{ratio:>7.2f}")
    verdict = "PASS" if ratio <= 0.70 else "FAIL"
    print(f"prompt characters after/before: {ratio:.3f} (target <= 0.70): {verdict}")


if __name__ == "__main__":
    raise SystemExit(main())
