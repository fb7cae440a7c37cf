"""Template copies: the share of a small real model's replies that copy the reply shape instead of answering.

A DyTopo run (code team, ``--rounds`` rounds, phased) on the real-model tier's llama-server with SmolLM2-135M
(``python -m tests.realmodel.setup_llama``), on this checkout and, with ``--baseline REV``, on that revision (a
temporary git worktree, this script run as a child with it on PYTHONPATH). Each call's kept reply (its last
attempt: after this checkout's re-ask) is judged by THIS checkout's detector (core.runtime.copies through
the parsers), whatever revision ran it, so before and after are counted alike. Prints, per revision: calls,
replies that copied the template, the share, and what the run itself counted as parsed / copied.

    python bench/template_copies.py [--baseline REV] [--rounds 2] [--repeat 1] [--max-tokens 256]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import baseline  # bench/baseline.py, beside this script
import prefix_cache  # bench/prefix_cache.py: the llama-server helpers

ROOT = baseline.ROOT
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(ROOT))


def run_once(rounds: int, max_tokens: int, slots: int) -> dict[str, Any]:
    """One DyTopo code run on a fresh llama-server: each call's (kind, kept reply) and the run's own counts."""
    try:
        from core.compose.runner import build_engine, open_backend
    except ImportError:
        from core.runtime.runner import build_engine, open_backend  # type: ignore[no-redef]
    from core.demo.scripts import DEMO_PROBLEMS
    from core.llm.embeddings import shared_embedder
    from core.runtime import events as ev
    from core.runtime.config import Settings

    events: list[Any] = []
    with prefix_cache.llama_server(slots) as port:

        async def run() -> None:
            settings = Settings(domain="code", max_rounds=rounds, base_url=f"http://127.0.0.1:{port}/v1",
                                model="smollm2", max_tokens=max_tokens, first_byte_timeout=600.0, call_timeout=600.0)
            backend = await open_backend(settings)
            try:
                engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [events.append],
                                      embedder=shared_embedder())
                await engine.run()
            finally:
                await backend.close()

        asyncio.run(run())
    calls = [(e.call, e.raw) for e in events if isinstance(e, ev.AgentFinished) and e.raw]
    finished = [e for e in events if isinstance(e, ev.RunFinished)][-1]
    return {"calls": calls, "parsed": finished.replies_parsed, "total": finished.replies_total,
            "copied": getattr(finished, "replies_copied", None)}


def judged(calls: list[list[str]]) -> tuple[int, int]:
    """(replies, copies): each reply parsed by this checkout's parser of its call kind; a TemplateCopied is a
    copy (a reply that does not parse at all is not one)."""
    from core.runtime.parsing import TemplateCopied, parse_descriptors, parse_manager, parse_work, parse_worker

    parsers = {"descriptors": parse_descriptors, "work": parse_work, "single-pass": parse_worker,
               "manager": parse_manager, "plan": parse_manager}
    copies = 0
    for call, raw in calls:
        try:
            parsers.get(call, parse_work)(raw)
        except TemplateCopied:
            copies += 1
        except ValueError:
            pass
    return len(calls), copies


def report(name: str, runs: list[dict[str, Any]]) -> None:
    replies = copies = 0
    for run in runs:
        n, c = judged(run["calls"])
        replies, copies = replies + n, copies + c
    share = f"{100 * copies / replies:.0f} %" if replies else "—"
    counted = "; ".join(f"the run counted {r['parsed']}/{r['total']} parsed"
                        + (f", {r['copied']} copied" if r["copied"] is not None else "") for r in runs)
    print(f"{name}: {replies} replies, {copies} copied the reply template ({share}); {counted}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", help="also measure this revision (e.g. 1292f2a), in a temporary worktree")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--slots", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    runs_of = lambda: [run_once(args.rounds, args.max_tokens, args.slots) for _ in range(args.repeat)]  # noqa: E731
    if args.child:
        print(json.dumps({"runs": runs_of()}))
        return 0
    if args.baseline:
        argv = ["--rounds", str(args.rounds), "--repeat", str(args.repeat), "--max-tokens", str(args.max_tokens),
                "--slots", str(args.slots)]
        report(f"before ({args.baseline})", baseline.measure_at(args.baseline, Path(__file__).resolve(), argv)["runs"])
    report("this checkout", runs_of())
    return 0


if __name__ == "__main__":
    sys.exit(main())
