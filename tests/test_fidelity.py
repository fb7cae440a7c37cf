"""The fidelity list (core.methods.fidelity): every method option it names exists in the registry, and
setting it changes what the run sends to the model (read from the scripted server's requests)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from core.compose.runner import build_engine, open_backend
from core.demo.requests import RequestInfo
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.methods.catalogue import get_method_info, method_names
from core.methods.fidelity import DEVIATIONS, describe_fidelity, fidelity_markdown, method_switches
from core.methods.topoweaver_prompts import CALL_ORCHESTRATE
from core.runtime.config import Settings
from core.runtime.events import CALL_MANAGER
from tui.cli import main as cli_main

SWITCHES = method_switches()


def _script(info: RequestInfo) -> str:
    """The demo, except that DyTopo's Manager never stops before max_rounds (later rounds are where memory
    shows) and TopoWeaver's orchestrator writes no plan (what its fallback option is for)."""
    if info.call == CALL_ORCHESTRATE:
        return "no plan today"
    reply = demo_script(info)
    if info.call == CALL_MANAGER:
        decision = json.loads(reply)
        decision["terminate"] = False
        return json.dumps(decision)
    return reply


def _base_options(method: str, tmp_path: Path) -> dict[str, Any]:
    """Options that keep a test run off the user's data dir (and DMoA off torch)."""
    return {
        "dmoa": {"router": "semantic", "weights_dir": str(tmp_path)},
        "topodim": {"weights": str(tmp_path / "policy.pt")},
    }.get(method, {})


async def _requests(method: str, options: dict[str, Any], embedder: Any) -> list[tuple[str, str, str]]:
    domain = "code" if method == "topoweaver" else "math"
    settings = Settings(domain=domain, strategy=method, strategy_options={method: options}, max_rounds=3,
                        max_retries=0)
    with ScriptedServer(_script) as server:
        backend = await open_backend(settings, server=server)
        engine = build_engine(DEMO_PROBLEMS[domain], settings, backend, [], embedder=embedder)
        try:
            finished = await asyncio.wait_for(engine.run(), timeout=120)  # a hang guard, not a speed test
        finally:
            await backend.close()
        assert finished.reason not in ("error", "cancelled"), (method, options, finished.detail)
        return sorted((r.call, r.role, repr(r.messages)) for r in server.requests)


def test_every_method_the_list_names_is_registered_and_every_option_exists() -> None:
    names = set(method_names())
    for d in DEVIATIONS:
        assert set(d.methods) <= names, d.topic
    for method, _, switch in SWITCHES:
        key, value = switch.option()
        spec = get_method_info(method).option(key)
        assert spec.check(method, value) != spec.default, (method, switch.text)  # a switch, not the default


@pytest.mark.parametrize(("method", "switch"), [(m, s.text) for m, _, s in SWITCHES])
async def test_each_switch_changes_what_the_run_sends(embedder: Any, tmp_path: Path, method: str, switch: str) -> None:
    key, _, value = switch.partition("=")
    base = _base_options(method, tmp_path)
    default = await _requests(method, base, embedder)
    switched = await _requests(method, {**base, key: value}, embedder)
    assert default and switched
    assert default != switched, f"{method} -o {switch} sent the same requests as the default"


def test_the_list_is_shown_method_by_method_and_in_the_readme() -> None:
    text = describe_fidelity(method_names())
    for d in DEVIATIONS:
        assert d.topic in text
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert fidelity_markdown(method_names()) in readme, "README's fidelity table is stale: regenerate it"


def test_strategies_fidelity_prints_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["strategies", "--fidelity"]) == 0
    out = capsys.readouterr().out
    assert "memory=latest" in out and "query=user" in out and "swarm-tui train dmoa" in out
    assert out.startswith("dytopo\n")  # method by method, DyTopo first
