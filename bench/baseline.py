"""What the before-and-after benchmarks share: a scripted run whose requests they read, written so that it also
runs on an older checkout, and the run of a benchmark script on another revision.

A script measures a revision by running itself as a child (``--child``) in a temporary git worktree of it, with
that worktree on PYTHONPATH; the child imports the revision's code and prints its figures as the last line of
JSON. This module is imported by its sibling scripts (``python bench/NAME.py`` puts bench/ on the path), so the
child uses this checkout's copy of it whatever the revision has."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def scripted_requests(script: Callable[[Any], str], problem: str = "", **settings: Any) -> list[Any]:
    """Every request (core.runtime.scripted.RequestInfo) of one run of the demo's code problem (or ``problem``) on
    the scripted server playing ``script``; ``settings`` are Settings fields, in plain strings (an older
    checkout has no DomainName or RoundProtocol enums, and theirs equal these strings)."""
    try:
        from core.compose.runner import build_engine, open_backend
    except ImportError:  # a revision from before the layers refactor
        from core.runtime.runner import build_engine, open_backend  # type: ignore[no-redef]
    try:
        from core.compose.plan import BackendChoice
    except ImportError:  # a revision from before BackendChoice: open_backend took server= itself
        BackendChoice = None  # type: ignore[assignment,misc]
    from core.demo.scripts import DEMO_PROBLEMS
    from core.demo.server import ScriptedServer
    from core.llm.embeddings import shared_embedder
    from core.runtime.config import Settings

    async def run(server: ScriptedServer) -> None:
        chosen = Settings(**{"domain": "code", "tau": 0.3, "k_in": 3, **settings})
        if BackendChoice is None:
            backend = await open_backend(chosen, server=server)  # type: ignore[call-arg]
        else:
            backend = await open_backend(chosen, BackendChoice(server=server))
        try:
            engine = build_engine(problem or DEMO_PROBLEMS["code"], chosen, backend, [], embedder=shared_embedder())
            await engine.run()
        finally:
            await backend.close()

    with ScriptedServer(script) as server:
        asyncio.run(run(server))
        return list(server.requests)


def measure_at(revision: str, script: Path, argv: list[str]) -> dict[str, Any]:
    """``script --child ARGV`` run on ``revision``: the JSON its last line prints."""
    with tempfile.TemporaryDirectory(prefix="swarm-bench-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), revision], check=True)
        try:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            out = subprocess.run([sys.executable, str(script), "--child", *argv],
                                 cwd=tmp, env=env, capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(f"the baseline run failed:\n{out.stderr[-2000:]}")
            return dict(json.loads(out.stdout.strip().splitlines()[-1]))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
