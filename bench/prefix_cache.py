"""Prefix cache: how much of each prompt a server's KV cache can reuse from the same agent's previous one.

A local server (llama.cpp slots, vLLM's prefix caching, SGLang, Ollama) skips the prefill of a prompt's
prefix it has already seen on that slot. Each agent's context grows round after round, so a layout in
which each prompt begins with the previous one is prefilled about once.

Scripted tier (no model; the scripted server on 127.0.0.1): every method runs with replies that change
every step (DyTopo's Manager never ends early, no convergence stop). Per method it prints

* reusable: the share of prompt characters that are a prefix of the same agent's previous prompt (the
  messages rendered as a chat template would: one block per message, in order);
* bound: the share an append-only layout of the same content could reuse at best: the characters of
  each prompt, in whole lines, that the agent's previous prompt already held (in any order);
* any earlier: the share that is a prefix of ANY earlier prompt (a global prefix cache: vLLM's automatic
  prefix caching, SGLang's radix cache), and gain, what that adds to the same-agent share;
* problem r1: the problem's characters in round 1's prompts after the first agent's, as a share of the run's
  prompt characters (what a cache shared by the team could skip at most of the problem in round 1);
* r1 chars / r1 prefilled: round 1's prompt characters and those a global cache would prefill (not a prefix
  of an earlier prompt). The "5k-token problem" rows run with the demo's problem and a ~5k-token module.

Real-model tier (``--llama``): a 3-round DyTopo code run on the real-model tier's llama-server
(SmolLM2-135M, ``python -m tests.realmodel.setup_llama``), one slot per agent (``-np`` = the team plus
the Manager); prints the share of prompt tokens the server took from its cache (llama.cpp's
``timings.cache_n`` over ``cache_n + prompt_n``) and the summed prefill time (``timings.prompt_ms``);
``PREFIX_CACHE_CALLS=1`` also prints each call's figures, by agent, call kind and round, to stderr.

Replay (``--replay``): the scripted tier's DyTopo prompts (single-pass and phased) sent to that llama-server
one at a time, each agent on its own slot, one token each: the cached share (over the whole run and over every
call after an agent's first), the prefilled tokens and the summed prefill time of the same requests, free of a
live run's differing replies and of calls that share the two cores. Each kept reply is put in its agent's slot
as a live run's generation leaves it (an assistant prefill, timed apart), or a conversation's next request
would prefill it as new text. With ``--baseline`` the two revisions' replays take turns (``--repeat`` times,
the median prefill time shown), so a machine whose load changes slows both alike.

The growth table (with ``--baseline``): prompt characters sent before and after, and what the growth is made
of: the earlier rounds' goals (what issue 46 allows), the kept replies' JSON around their public text, the
earlier turns' asks, and the rest (the preamble's team line, a phased worker's second reply shape).

All tiers run on this checkout and, with ``--baseline REV``, on that revision (a temporary git worktree,
the same script run as a child with it on PYTHONPATH):

    python bench/prefix_cache.py [--baseline REV] [--rounds 3] [--replay] [--llama] [--slots N] [--repeat 1]
        [--llama-protocol phased|single-pass] [--llama-option KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib.util
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import baseline  # bench/baseline.py, beside this script

ROOT = baseline.ROOT
if not os.environ.get("PYTHONPATH"):  # a baseline child imports its revision through PYTHONPATH
    sys.path.insert(0, str(ROOT))

# (label, method, protocol, method options): what the scripted tier runs.
CASES: tuple[tuple[str, str, str, dict[str, Any]], ...] = (
    ("dytopo single-pass", "dytopo", "single-pass", {}),
    ("  single-pass paper order", "dytopo", "single-pass", {"prompt_order": "paper"}),
    ("dytopo phased", "dytopo", "phased", {}),
    ("  descriptor round", "dytopo", "phased", {"descriptor_context": "round"}),
    ("  paper order", "dytopo", "phased", {"prompt_order": "paper"}),
    ("broadcast", "broadcast", "phased", {}),
    ("chain", "chain", "phased", {}),
    ("star", "star", "phased", {}),
    ("random", "random", "phased", {}),
    ("topodim", "topodim", "phased", {}),
    ("dmoa", "dmoa", "phased", {}),
    ("topoweaver", "topoweaver", "phased", {}),
)
# The long-problem case: the demo's problem with a pasted module of about 5k tokens (20k characters).
LONG_TOKENS = 5000


def long_problem() -> str:
    """The demo's code problem and a module pasted below it, about LONG_TOKENS tokens in all."""
    from core.demo.scripts import DEMO_PROBLEMS

    lines = [DEMO_PROBLEMS["code"].rstrip(), "", "The module these functions go into, for context:", "```python"]
    i = 0
    while sum(len(line) + 1 for line in lines) < 4 * LONG_TOKENS - 40:
        lines += [f"def helper_{i}(values: list[int]) -> int:", f'    """Sum of the values times {i}."""',
                  f"    return sum(v * {i} for v in values)", ""]
        i += 1
    return "\n".join([*lines, "```"])


# --- what a prompt is, as a server's cache sees it ---------------------------------------------------------
def rendered(messages: list[dict[str, Any]]) -> str:
    """The messages as one text, one block per message in order (as a chat template lays them out)."""
    parts = []
    for m in messages:
        content = m.get("content", "")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(f"<|{m.get('role', '')}|>\n{content}\n")
    return "".join(parts)


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def shared_lines(previous: str, current: str) -> int:
    """Characters of ``current``, in whole lines, that ``previous`` also held (any order)."""
    have = Counter(previous.splitlines(keepends=True))
    total = 0
    for line in current.splitlines(keepends=True):
        if have[line] > 0:
            have[line] -= 1
            total += len(line)
    return total


def reuse(prompts: list[tuple[str, str, int]], problem: str = "") -> dict[str, int]:
    """Over the prompts in the order sent, each (agent, text, round): {chars, prefix (of the same agent's
    previous prompt), bound, shared (prefix of any earlier prompt: a global cache), round1 (characters of round
    1's prompts), round1_fresh (of those, what a global cache prefills), problem_r1 (the problem's characters
    in round 1's prompts after the first agent's: what a cache shared by the team could skip at most)}."""
    last: dict[str, str] = {}
    seen: list[str] = []
    chars = prefix = bound = shared = round1 = round1_fresh = 0
    round1_agents: set[str] = set()
    for agent, text, round_no in prompts:
        chars += len(text)
        previous = last.get(agent)
        if previous is not None:
            prefix += common_prefix(previous, text)
            bound += shared_lines(previous, text)
        best = max((common_prefix(earlier, text) for earlier in seen), default=0)
        shared += best
        if round_no <= 1:
            round1 += len(text)
            round1_fresh += len(text) - best
            round1_agents.add(agent)
        last[agent] = text
        seen.append(text)
    problem_r1 = len(problem.strip()) * max(0, len(round1_agents) - 1)
    return {"chars": chars, "prefix": prefix, "bound": bound, "shared": shared, "calls": len(prompts),
            "round1": round1, "round1_fresh": round1_fresh, "problem_r1": problem_r1}


# --- the scripted tier ---------------------------------------------------------------------------------------
def changing(script: Callable[[Any], str]) -> Callable[[Any], str]:
    """The demo's replies, changed every round: DyTopo's Manager never ends the run and sets a new goal,
    every line of a worker's public work names its round (the demo repeats its last round's replies)."""

    def reply(info: Any) -> str:
        text = script(info)
        if info.call.startswith(("dmoa-", "tw-")) or not info.role:
            return text
        try:
            data = json.loads(text)
        except ValueError:
            return text
        if not isinstance(data, dict):
            return text
        if info.call in ("plan", "manager"):
            data.update(terminate=False, final_answer="",
                        goal=f"Round {info.round + 1}: {data.get('goal') or 'improve the solution'} "
                             f"(step {info.round + 1} of the plan)")
        elif isinstance(data.get("public"), str):  # every line: a reply that repeats no line of the last one
            lines = data["public"].splitlines() or [""]
            data["public"] = "\n".join(f"{line} [{info.role}, round {info.round}]" for line in lines)
        return json.dumps(data)

    plays = getattr(script, "plays_instead", None)
    if plays is not None:
        reply.plays_instead = plays  # type: ignore[attr-defined]
    return reply


def scripted_requests(method: str, protocol: str, options: dict[str, Any], rounds: int, problem: str = ""
                      ) -> list[tuple[str, list[dict[str, Any]], int]]:
    """Each worker and Manager request of one scripted run, in the order sent: (agent, messages, round)."""
    from core.demo.scripts import demo_script

    requests = baseline.scripted_requests(changing(demo_script), problem, strategy=method, protocol=protocol,
                                          max_rounds=rounds, convergence_threshold=1.0,
                                          strategy_options={method: options} if options else {})
    return [(r.role, list(r.messages), r.round) for r in requests if r.role]


def scripted_case(method: str, protocol: str, options: dict[str, Any], rounds: int, problem: str = ""
                  ) -> dict[str, int]:
    from core.demo.scripts import DEMO_PROBLEMS

    requests = scripted_requests(method, protocol, options, rounds, problem)
    figures = reuse([(agent, rendered(messages), round_no) for agent, messages, round_no in requests],
                    problem or DEMO_PROBLEMS["code"])
    return {**figures, **growth_parts(requests)}


GOAL = re.compile(r"ROUND (\d+) GOAL:")


def growth_parts(requests: list[tuple[str, list[dict[str, Any]], int]]) -> dict[str, int]:
    """What a conversation sends that a per-request prompt of the same round does not, in characters over the
    run: earlier rounds' goals (in the user turns), the kept replies beyond their public text (each reply is
    kept as the model wrote it: descriptors, private notes, the JSON around them; a Manager's plan), and the
    asks of earlier turns. Zero for a per-request layout (no assistant turns, no earlier goal)."""
    asks: set[str] = set()
    with contextlib.suppress(ImportError):  # an older revision has neither
        from core.runtime.prompts import WORKER_ASKS
        asks |= set(WORKER_ASKS.values())
        from core.runtime.prompts import TURN_ASKS
        asks |= set(TURN_ASKS.values())
    goals = replies = old_asks = 0
    for _, messages, round_no in requests:
        for i, message in enumerate(messages):
            content = message.get("content", "")
            if not isinstance(content, str) or message.get("role") == "system":
                continue
            if message.get("role") == "assistant":
                replies += len(content) - len(_public(content))
                continue
            for part in content.split("\n\n"):
                found = GOAL.match(part)
                goals += len(part) + 2 if found and int(found.group(1)) < round_no else 0
                old_asks += len(part) + 2 if part.removesuffix(" /no_think") in asks and i < len(messages) - 1 else 0
    return {"earlier_goals": goals, "reply_json": replies, "earlier_asks": old_asks}


def _public(reply: str) -> str:
    try:
        data = json.loads(reply)
    except ValueError:
        return reply
    public = data.get("public") if isinstance(data, dict) else None
    return public if isinstance(public, str) else ""


def scripted_tier(rounds: int) -> dict[str, dict[str, int] | None]:
    figures: dict[str, dict[str, int] | None] = {}
    cases = [(label, method, protocol, options, "") for label, method, protocol, options in CASES]
    cases += [(f"5k-token problem {p}", "dytopo", p, {}, long_problem()) for p in ("single-pass", "phased")]
    for label, method, protocol, options, problem in cases:
        try:
            figures[label] = scripted_case(method, protocol, options, rounds, problem)
        except Exception as exc:  # an option (or a method) a baseline revision does not have
            if type(exc).__name__ not in ("MethodError", "ValidationError", "KeyError"):
                raise
            figures[label] = None
    return figures


# --- the real-model tier -------------------------------------------------------------------------------------
@functools.cache
def _process_helpers() -> ModuleType:
    """tests/realmodel/llama_process.py of this checkout, loaded by its path: a --baseline child has an older
    checkout's tests/ on its path, which may lack it."""
    path = ROOT / "tests" / "realmodel" / "llama_process.py"
    spec = importlib.util.spec_from_file_location("_llama_process", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _llama_paths(binary: str = "") -> tuple[Path, Path]:
    """The llama-server binary and the model of the real-model tier (the revision's own setup when it has one)."""
    sys.path.append(str(ROOT))  # tests.realmodel: the revision's own, else this checkout's
    import tests.realmodel.setup_llama as setup  # the revision's own when it has one (--baseline)

    cache = setup.CACHE
    # An older revision's setup has no SERVER: the portable build this checkout's setup makes is the one to run.
    built = getattr(setup, "SERVER", cache / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp" / "build-portable"
                    / "bin" / "llama-server")
    server = Path(binary) if binary else built
    model = cache / "model" / setup.MODEL_MEMBER
    if not server.is_file() or not model.is_file():
        raise SystemExit("llama-server or the model is missing: python -m tests.realmodel.setup_llama builds them")
    return server, model


@contextlib.contextmanager
def llama_server(slots: int, binary: str = "", ctx_per_slot: int = 4096) -> Iterator[int]:
    """A fresh llama-server with ``slots`` slots on a free port, stopped on exit; yields the port."""
    server, model = _llama_paths(binary)
    helpers = _process_helpers()
    try:
        with helpers.llama_server(server, model, ctx_size=ctx_per_slot * slots, parallel=slots,
                                  extra=["--seed", "1"]) as port:
            yield port
    except helpers.ServerFailed as exc:
        raise SystemExit(str(exc)) from None


def _call_figures(payload: bytes) -> dict[str, float]:
    """One reply's llama.cpp timings: prompt tokens from the cache (cache_n), prefilled (prompt_n), prefill ms."""
    timings = _process_helpers().reply_field(payload, "timings")
    return {k: float(timings.get(k, 0)) for k in ("cache_n", "prompt_n", "prompt_ms")}


def _figures(calls: list[dict[str, float]]) -> dict[str, float]:
    cached = sum(c["cache_n"] for c in calls)
    fresh = sum(c["prompt_n"] for c in calls)
    return {"calls": len(calls), "cached": cached, "prompt": cached + fresh,
            "prefill_ms": round(sum(c["prompt_ms"] for c in calls), 1)}


Requests = list[tuple[str, list[dict[str, Any]], int]]
PROTOCOLS = ("single-pass", "phased")


def llama_replay(slots: int, requests: Requests, binary: str = "", per_agent: bool = False) -> dict[str, float]:
    """A scripted run's requests sent to a fresh llama-server one at a time, placed as the revision's app places
    them (``per_agent``: each agent on a slot of its own; else the server's choice), one token each: what the server
    took from its cache and how long it prefilled (tests/realmodel/llama_process.py ``replay``: one at a time, so
    each call's prefill time is its own; each kept reply put in its slot as a live run's generation leaves it, and
    timed apart)."""
    with llama_server(slots, binary) as port:
        calls = _process_helpers().replay(port, requests, slots, per_agent=per_agent)
    asked = [c for c in calls if not c["reply"]]
    later = _figures([c for c in asked if c["later"]])
    return {**_figures(asked), "later_cached": later["cached"], "later_prompt": later["prompt"],
            "later_ms": later["prefill_ms"], "reply_ms": round(sum(c["prompt_ms"] for c in calls if c["reply"]), 1)}


def replay_tier(args: argparse.Namespace, revisions: list[dict[str, Any]]) -> None:
    """Each revision's scripted requests (``replay_requests``) replayed ``--repeat`` times, the revisions taking
    turns, so a machine whose load changes slows them alike; the prefill times are the runs' medians."""
    for protocol in PROTOCOLS:
        runs: list[list[dict[str, float]]] = [[] for _ in revisions]
        for _ in range(args.repeat):
            for i, figures in enumerate(revisions):
                runs[i].append(llama_replay(args.slots, figures["replay_requests"][protocol], args.llama_server,
                                            figures.get("per_agent_slots", True)))
        for figures, done in zip(revisions, runs, strict=True):
            median = {k: sorted(r[k] for r in done)[len(done) // 2] for k in ("prefill_ms", "later_ms", "reply_ms")}
            figures.setdefault("replay", {})[protocol] = {**done[0], **median}


def llama_tier(slots: int, rounds: int, protocol: str = "phased", options: dict[str, str] | None = None,
               binary: str = "", max_tokens: int = 256, placement: str = "") -> dict[str, float]:
    """One DyTopo code run on a fresh llama-server (the real-model tier's build and model)."""
    try:
        from core.compose.runner import build_engine, open_backend
    except ImportError:
        from core.runtime.runner import build_engine, open_backend  # type: ignore[no-redef]
    from core.demo.scripts import DEMO_PROBLEMS
    from core.llm.embeddings import shared_embedder
    from core.runtime.config import Settings

    calls: list[dict[str, float]] = []
    agents: set[str] = set()  # the agents whose first call was seen
    ran: list[int] = []  # the rounds the run completed

    def seen(headers: Any, body: bytes, status: int, payload: bytes) -> None:
        if status == 200 and _process_helpers().reply_field(payload, "timings"):
            call = headers.get("X-Swarm-Call", "")
            role = call.split(";", 1)[0].strip()  # "role=Developer; call=...; round=..."
            calls.append({**_call_figures(payload), "later": float(role in agents)})
            agents.add(role)
            if os.environ.get("PREFIX_CACHE_CALLS"):  # each call's figures, for a closer look
                print(headers.get("X-Swarm-Call", ""), calls[-1], file=sys.stderr)

    with llama_server(slots, binary) as port, _process_helpers().Proxy(port, seen).serving() as proxy:

        async def run() -> None:
            chosen: dict[str, Any] = {"domain": "code", "protocol": protocol}  # plain strings, as above
            chosen.update({"llama_slots": placement} if placement else {})
            settings = Settings(**chosen, max_rounds=rounds, tau=0.3, k_in=3,
                                convergence_threshold=1.0, base_url=proxy.base_url,
                                model="smollm2", max_tokens=max_tokens, first_byte_timeout=600.0,
                                call_timeout=600.0,
                                strategy_options={"dytopo": dict(options)} if options else {})
            backend = await open_backend(settings)
            try:
                engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [], embedder=shared_embedder())
                ran.append((await engine.run()).rounds)
            finally:
                await backend.close()

        asyncio.run(run())
    later = _figures([c for c in calls if c["later"]])
    return {"rounds": ran[0] if ran else 0, **_figures(calls), "later_cached": later["cached"],
            "later_prompt": later["prompt"]}


# --- before and after ----------------------------------------------------------------------------------------
def measure(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"scripted": scripted_tier(args.rounds)}
    if args.llama:
        options = dict(o.split("=", 1) for o in args.llama_option)
        runs = [llama_tier(args.slots, args.rounds, args.llama_protocol, options, args.llama_server, args.max_tokens,
                           args.llama_slots) for _ in range(args.repeat)]
        out["llama"] = {k: sum(r[k] for r in runs) / len(runs) for k in runs[0]}
    if args.replay:  # sent to llama-server by the parent (replay_tier), the revisions taking turns
        out["replay_requests"] = {p: scripted_requests("dytopo", p, {}, args.rounds) for p in PROTOCOLS}
        out["per_agent_slots"] = _per_agent_slots()
    return out


def _per_agent_slots() -> bool:
    """Whether this revision's app keeps each agent on a llama.cpp slot of its own (every revision before the
    ``llama_slots`` setting did; since, only when it says "per-agent")."""
    from core.runtime.config import Settings

    placement = getattr(Settings(), "llama_slots", None)
    return placement is None or placement == "per-agent"


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:5.1f} %" if whole else "    — "


def report(name: str, figures: dict[str, Any]) -> None:
    print(f"\n{name}")
    print(f"  {'scripted server':<30} {'calls':>5} {'prompt chars':>12} {'reusable':>9} {'bound':>9} "
          f"{'any earlier':>11} {'gain':>7} {'problem r1':>10} {'r1 chars':>9} {'r1 prefilled':>12}")
    for label, f in figures["scripted"].items():
        if f is None:
            print(f"  {label:<30} (not in this revision)")
            continue
        shared = f.get("shared", 0)
        print(f"  {label:<30} {f['calls']:>5} {f['chars']:>12} {_pct(f['prefix'], f['chars']):>9} "
              f"{_pct(f['bound'], f['chars']):>9} {_pct(shared, f['chars']):>11} "
              f"{_pct(shared - f['prefix'], f['chars']):>7} {_pct(f.get('problem_r1', 0), f['chars']):>10} "
              f"{f.get('round1', 0):>9} {f.get('round1_fresh', 0):>12}")
    llama = figures.get("llama")
    if llama:
        print(f"  llama-server: {llama['rounds']:.0f} rounds, {llama['calls']:.0f} calls, "
              f"{llama['prompt']:.0f} prompt tokens, cached "
              f"{_pct(llama['cached'], llama['prompt']).strip()}, {llama['prompt'] - llama['cached']:.0f} prefilled, "
              f"prefill {llama['prefill_ms'] / 1000:.2f} s; after each agent's first call: cached "
              f"{_pct(llama.get('later_cached', 0), llama.get('later_prompt', 0)).strip()}")
    for protocol, f in figures.get("replay", {}).items():
        later_fresh = f.get("later_prompt", 0) - f.get("later_cached", 0)
        print(f"  llama-server, the scripted {protocol} prompts replayed: {f['calls']:.0f} calls, "
              f"{f['prompt']:.0f} prompt tokens, cached {_pct(f['cached'], f['prompt']).strip()}, "
              f"{f['prompt'] - f['cached']:.0f} prefilled, prefill {f['prefill_ms'] / 1000:.2f} s; after each "
              f"agent's first call: cached {_pct(f.get('later_cached', 0), f.get('later_prompt', 0)).strip()}, "
              f"{later_fresh:.0f} prefilled, prefill {f.get('later_ms', 0) / 1000:.2f} s "
              f"(replies put in the slots: {f.get('reply_ms', 0) / 1000:.2f} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", help="also measure this revision (e.g. d657fe9), in a temporary worktree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--llama", action="store_true", help="also run the real-model tier's llama-server")
    parser.add_argument("--slots", type=int, default=5,
                        help="llama-server -np (default 5: the code team and its Manager)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="llama-server runs to average (--llama); replays whose median prefill time is shown")
    parser.add_argument("--max-tokens", type=int, default=256, help="each call's max_tokens on the llama-server")
    parser.add_argument("--replay", action="store_true",
                        help="also send the scripted runs' prompts (the same content before and after) to llama-server")
    parser.add_argument("--llama-protocol", default="phased", choices=("phased", "single-pass"))
    parser.add_argument("--llama-server", default="", metavar="PATH",
                        help="another llama-server binary (default: the real-model tier's build)")
    parser.add_argument("--llama-slots", default="", choices=("", "server", "per-agent"),
                        help="the live run's llama_slots setting (default: the revision's own)")
    parser.add_argument("--llama-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a DyTopo option for the llama-server run (e.g. descriptor_context=round)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    argv = ["--rounds", str(args.rounds), "--slots", str(args.slots), "--repeat", str(args.repeat)]
    if args.replay or args.llama:
        argv += ["--llama-server", args.llama_server] + (["--replay"] if args.replay else [])
    if args.llama:
        argv += ["--llama", "--llama-protocol", args.llama_protocol, "--max-tokens", str(args.max_tokens)]
        argv += ["--llama-slots", args.llama_slots] if args.llama_slots else []
    # The baseline runs with its own defaults: --llama-option names this checkout's options.
    if args.child:
        print(json.dumps(measure(args)))
        return 0
    before = baseline.measure_at(args.baseline, Path(__file__).resolve(), argv) if args.baseline else None
    after = measure(args)
    if args.replay:
        replay_tier(args, [f for f in (before, after) if f is not None])
    if before is not None:
        report(f"before ({args.baseline})", before)
    report("this checkout", after)
    if before is not None:
        growth_report(before["scripted"], after["scripted"], f"against {args.baseline}")
    # The same content in the paper's layout, on this checkout: what the conversation's layout alone adds.
    paper = {"dytopo single-pass": "  single-pass paper order", "dytopo phased": "  paper order"}
    growth_report({label: after["scripted"].get(ref) for label, ref in paper.items()},
                  {label: after["scripted"][label] for label in paper},
                  "against this checkout's paper order (the same content; only its place differs)")
    return 0


def growth_report(before: dict[str, dict[str, int] | None], after: dict[str, dict[str, int] | None],
                  against: str) -> None:
    """Prompt characters sent before and after, and what the growth is made of (issue 46: by the earlier goals
    only, or say by how much more)."""
    print(f"\n  prompt characters sent, {against}")
    print("  layout                         before     after   growth   of the growth: earlier goals, "
          "replies' JSON, earlier asks, the rest")
    for label, now in after.items():
        was = before.get(label)
        if now is None or was is None or label.startswith(("topo", "dmoa")):
            continue
        grown = now["chars"] - was["chars"]
        parts = [now.get(k, 0) for k in ("earlier_goals", "reply_json", "earlier_asks")]
        shares = ", ".join(_pct(part, grown).strip() for part in [*parts, grown - sum(parts)]) if grown > 0 else "—"
        print(f"  {label:<30} {was['chars']:>8} {now['chars']:>9} {_pct(grown, was['chars']):>8}   {shares}")


if __name__ == "__main__":
    sys.exit(main())
