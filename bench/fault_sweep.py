"""A fault sweep: how many runs end in error against a server that fails one reply in 18.

36 headless demo runs on 127.0.0.1 (3 domains x 2 protocols x 6 offsets), each against the scripted demo
server with one chat request in every 18 failing: in turn a 429 (without Retry-After), a 500, a connection
dropped mid-reply and a stream that stalls past call_timeout. The offset moves which requests fail, so the
faults land on different agents, calls and phases. A run fails when it ends with reason ``error`` or would
exit 1 from ``swarm-tui --headless`` (no reply parsed); every other end (a decision, max_rounds) is fine.
A run is also bounded in time (``--timeout``): a run still going then counts as a failure too.

    PYTHONPATH=. .venv/bin/python bench/fault_sweep.py            # this checkout
    PYTHONPATH=/path/to/other/checkout .venv/bin/python bench/fault_sweep.py   # another one (before/after)

Only the server's ``FaultRule`` and fault kinds that every version has are used (``_take_fault`` is
replaced here), so the same sweep runs on older checkouts.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any

try:
    import core  # noqa: F401  (PYTHONPATH names the checkout to measure)
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import FaultRule, ScriptedServer
from core.llm.embeddings import shared_embedder
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.scripted import RequestInfo

DOMAINS = ("code", "math", "general")
PROTOCOLS = ("phased", "single-pass")
EVERY = 18  # one request in EVERY fails
KINDS = ("http_429", "http_500", "drop", "stall")


class PeriodicFaults(ScriptedServer):
    """The demo server, failing one call in EVERY: a call (agent, kind, round) whose hash with the run's seed
    falls on 0 mod EVERY fails its first PERSIST attempts, with a kind picked by the same hash. Its failure
    outlives the client's own retries (3 attempts), as a busy or flaky server's does, then it is served."""

    def __init__(self, seed: str, persist: int, behaviour: ServerBehaviour) -> None:
        super().__init__(demo_script, behaviour)
        self.seed = seed  # the domain, protocol and offset: each run's faults land elsewhere
        self.persist = persist
        self.served = 0
        self.injected: list[str] = []  # one entry per faulty call (not per attempt)
        self._attempts: dict[tuple[Any, ...], int] = {}
        self._count_lock = threading.Lock()

    def _take_fault(self, info: RequestInfo) -> FaultRule | None:
        identity = (info.role, info.call, info.round)
        digest = zlib.crc32(repr((self.seed, *identity)).encode())
        with self._count_lock:
            self.served += 1
            if digest % EVERY:
                return None
            tried = self._attempts.get(identity, 0)
            self._attempts[identity] = tried + 1
            if tried >= self.persist:
                return None
            kind = KINDS[(digest // EVERY) % len(KINDS)]
            if not tried:
                self.injected.append(kind)
        return FaultRule(kind)


def bare_429(server: PeriodicFaults) -> None:
    """A 429 without Retry-After, where the server can send one (older servers always name a short wait)."""
    fields = getattr(FaultRule, "__dataclass_fields__", {})
    if "send_retry_after" in fields:
        original = server._take_fault

        def take(info: RequestInfo) -> FaultRule | None:
            rule = original(info)
            if rule is not None and rule.kind == "http_429":
                return FaultRule("http_429", send_retry_after=False)  # type: ignore[call-arg]
            return rule

        server._take_fault = take  # type: ignore[method-assign]


async def one_run(domain: str, protocol: str, offset: int, args: argparse.Namespace, embedder: Any) -> dict[str, Any]:
    # Plain strings: older checkouts have no DomainName / RoundProtocol enums (theirs equal these strings).
    chosen: dict[str, Any] = {"domain": domain, "protocol": protocol}
    settings = Settings(**chosen, max_rounds=args.max_rounds, call_timeout=args.call_timeout, first_byte_timeout=10.0)
    server = PeriodicFaults(f"{domain}/{protocol}/{offset}", args.persist,
                            ServerBehaviour(stall_seconds=args.call_timeout * 3))
    bare_429(server)
    start = time.monotonic()
    with server:
        backend = await open_backend(settings, BackendChoice(server=server))
        events: list[ev.Event] = []
        engine = build_engine(DEMO_PROBLEMS[domain], settings, backend, [events.append], embedder=embedder)
        try:
            finished = await asyncio.wait_for(engine.run(), timeout=args.timeout)
            reason, detail = str(finished.reason), finished.detail
            exit_1 = reason == "error" or (finished.replies_total > 0 and finished.replies_parsed == 0)
        except TimeoutError:
            reason, detail, exit_1 = "timeout", f"still running after {args.timeout:g} s", True
        finally:
            await backend.close()
    notices = [e.message for e in events if isinstance(e, ev.Notice)]
    return {
        "domain": domain, "protocol": protocol, "offset": offset, "reason": reason, "detail": detail,
        "failed": exit_1, "faults": list(server.injected), "requests": server.served,
        "seconds": time.monotonic() - start, "notices": notices,
    }


async def sweep(args: argparse.Namespace) -> list[dict[str, Any]]:
    embedder = shared_embedder()
    embedder.load()
    offsets = list(range(args.offsets))
    results = []
    for domain, protocol, offset in itertools.product(DOMAINS, PROTOCOLS, offsets):
        result = await one_run(domain, protocol, offset, args, embedder)
        results.append(result)
        mark = "FAIL" if result["failed"] else "ok  "
        print(f"{mark} {domain:<8} {protocol:<12} offset {offset:>2}: {result['reason']:<9} "
              f"{result['requests']:>3} requests, faults {','.join(result['faults']) or '-'}, "
              f"{result['seconds']:5.1f} s" + (f" — {result['detail'][:110]}" if result["failed"] else ""),
              flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offsets", type=int, default=6, help="offsets per domain and protocol (default 6)")
    parser.add_argument("--persist", type=int, default=3, help="attempts a faulty call fails before it is served")
    parser.add_argument("--max-rounds", type=int, default=3)
    parser.add_argument("--call-timeout", type=float, default=1.5, help="seconds of silence that break a stall")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a run counts as failed")
    args = parser.parse_args()
    start = time.monotonic()
    results = asyncio.run(sweep(args))
    failed = sum(r["failed"] for r in results)
    errors = sum(r["reason"] == "error" for r in results)
    print(f"\n{failed} of {len(results)} runs failed (reason error or exit 1); {errors} ended with reason error; "
          f"{sum(len(r['faults']) for r in results)} faults injected; {time.monotonic() - start:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
