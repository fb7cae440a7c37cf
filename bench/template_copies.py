"""Template copies: the share of a small real model's replies that copy the reply shape instead of answering.

Per method (``--methods``, default every method with a reply shape: dytopo, topoweaver, topodim, dmoa), one run
(code team, ``--rounds`` rounds or steps) on the real-model tier's llama-server with SmolLM2-135M
(``python -m tests.realmodel.setup_llama``), on this checkout and, with ``--baseline REV``, on that revision (a
temporary git worktree, this script run as a child with it on PYTHONPATH). Each call's kept reply (its last
attempt: after this checkout's re-ask) of a shaped call is judged by THIS checkout's detector
(core.runtime.copies through the parsers; a TopoWeaver-R1 plan equal to the former prompt's filled example
counts as a copy too), whatever revision ran it, so before and after are counted alike. Plain-text calls
(the methods' agents, DMoA's Summarizer) are judged by the run itself (their instructions are not in the
record). Prints, per revision and method: shaped replies, those that copied the template, the share, and what
the run itself counted as parsed / copied.

    python bench/template_copies.py [--baseline REV] [--methods dytopo,topoweaver] [--rounds 2] [--max-tokens 256]
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


def run_once(method: str, rounds: int, max_tokens: int, slots: int) -> dict[str, Any]:
    """One code run of ``method`` on a fresh llama-server: each call's (kind, kept reply) and the run's counts."""
    try:
        from core.compose.runner import build_engine, open_backend
    except ImportError:
        from core.runtime.runner import build_engine, open_backend  # type: ignore[no-redef]
    from core.demo.scripts import DEMO_PROBLEMS
    from core.llm.embeddings import shared_embedder
    from core.runtime import events as ev
    from core.runtime.config import Settings

    options = {"topoweaver": {"turns": rounds}, "dmoa": {"l_max": rounds, "router": "llm"},
               "topodim": {"generator": "prior"}}.get(method, {})
    events: list[Any] = []
    with prefix_cache.llama_server(slots) as port:

        async def run() -> None:
            settings = Settings(domain="code", max_rounds=rounds, base_url=f"http://127.0.0.1:{port}/v1",
                                model="smollm2", max_tokens=max_tokens, first_byte_timeout=600.0, call_timeout=600.0,
                                strategy=method, strategy_options={method: options})
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
    return {"method": method, "calls": calls, "parsed": finished.replies_parsed, "total": finished.replies_total,
            "copied": getattr(finished, "replies_copied", None)}


def _plan_copied(raw: str) -> bool:
    """A TopoWeaver-R1 plan that repeats a slot of the shape, or is the former prompt's filled example."""
    import yaml

    from core.methods.topoweaver.copies import copied_plan_fields
    from core.methods.topoweaver.plan import extract_yaml
    from core.methods.topoweaver.prompts import _EXAMPLE_CODE

    if copied_plan_fields(raw):
        return True
    text = extract_yaml(raw)
    try:
        return text is not None and yaml.safe_load(text) == yaml.safe_load(_EXAMPLE_CODE)
    except yaml.YAMLError:
        return False


def _judges() -> dict[str, Any]:
    """Each shaped call kind's judge: True when the reply copied the template."""
    from core.methods.topodim.generators import parse_prior
    from core.runtime.parsing import TemplateCopied, parse_descriptors, parse_manager, parse_work, parse_worker

    def by(parser: Any) -> Any:
        def judge(raw: str) -> bool:
            try:
                parser(raw)
            except TemplateCopied:
                return True
            except ValueError:
                pass
            return False
        return judge

    return {"descriptors": by(parse_descriptors), "work": by(parse_work), "single-pass": by(parse_worker),
            "manager": by(parse_manager), "plan": by(parse_manager), "tw-orchestrate": _plan_copied,
            "typed-graph": by(parse_prior), "dmoa-select": by(_selection)}


def _selection(raw: str) -> Any:
    from core.methods.dmoa.prompts import parse_selection
    from core.runtime.rosters import builtin_team

    return parse_selection(raw, [w.name for w in builtin_team("code").workers], 4)


def judged(calls: list[list[str]]) -> tuple[int, int]:
    """(shaped replies, copies) by this checkout's detector; plain-text calls are not judged here."""
    judges = _judges()
    shaped = [(call, raw) for call, raw in calls if call in judges]
    return len(shaped), sum(judges[call](raw) for call, raw in shaped)


def report(name: str, runs: list[dict[str, Any]]) -> None:
    for method in dict.fromkeys(r.get("method", "dytopo") for r in runs):
        mine = [r for r in runs if r.get("method", "dytopo") == method]
        replies = copies = 0
        for run in mine:
            n, c = judged(run["calls"])
            replies, copies = replies + n, copies + c
        share = f"{100 * copies / replies:.0f} %" if replies else "—"
        counted = "; ".join(f"the run counted {r['parsed']}/{r['total']} parsed"
                            + (f", {r['copied']} copied" if r["copied"] is not None else "") for r in mine)
        print(f"{name}, {method}: {replies} shaped replies, {copies} copied the reply template ({share}); {counted}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", help="also measure this revision (e.g. 1292f2a), in a temporary worktree")
    parser.add_argument("--methods", default="dytopo,topoweaver,topodim,dmoa")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--slots", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]

    def runs_of() -> list[dict[str, Any]]:
        return [run_once(m, args.rounds, args.max_tokens, args.slots) for m in methods for _ in range(args.repeat)]

    if args.child:
        print(json.dumps({"runs": runs_of()}))
        return 0
    if args.baseline:
        argv = ["--rounds", str(args.rounds), "--repeat", str(args.repeat), "--max-tokens", str(args.max_tokens),
                "--slots", str(args.slots), "--methods", args.methods]
        report(f"before ({args.baseline})", baseline.measure_at(args.baseline, Path(__file__).resolve(), argv)["runs"])
    report("this checkout", runs_of())
    return 0


if __name__ == "__main__":
    sys.exit(main())
