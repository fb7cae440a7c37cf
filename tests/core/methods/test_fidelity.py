"""The fidelity list names real options, and each one changes what the method does."""

from __future__ import annotations

from typing import Any

import pytest

from core.methods.catalogue import build_method, get_method_info, method_names
from core.methods.fidelity import deviations, fidelity_text
from core.runtime.rosters import builtin_team
from tests.support.paths import ROOT
from tui.entry import main

OPTION_ENTRIES = [d for d in deviations() if d.option is not None]


def test_every_entry_names_a_registered_method() -> None:
    names = set(method_names())
    assert {d.method for d in deviations()} - {"all"} <= names
    # The list: each of these must be covered.
    text = fidelity_text()
    for needle in (">= tau", "/no_think", "k_in above N-1", "eq. 7", "eq. 8-9", "generator is prior",
                   "train dmoa", "memory=latest", "P_sys"):
        assert needle in text, needle


def _other_value(spec: Any, value: Any) -> Any:
    """Another allowed value of an option: the opt-out of a paper default."""
    return (not value) if spec.kind == "bool" else next(c for c in spec.choices if c != value)


def _state(method: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(method).items() if isinstance(v, str | int | float | bool)}


@pytest.mark.parametrize("entry", OPTION_ENTRIES, ids=lambda d: f"{d.method}-{d.option[0]}")
def test_each_named_option_exists_and_changes_the_method(entry: Any) -> None:
    name, value = entry.option
    info = get_method_info(entry.method)
    spec = info.option(name)
    checked = info.resolve({name: value})[name]
    assert (spec.default == checked) is entry.default_is_paper
    # Against the opt-out (any other allowed value) or, where the paper is not the default, the default.
    other = _other_value(spec, checked) if entry.default_is_paper else spec.default
    team = builtin_team("code")
    paper = build_method(entry.method, {name: checked}, team)
    economy = build_method(entry.method, {name: other}, team)
    assert _state(paper) != _state(economy), f"-o {name}={value} did not reach the method"


def test_strategies_fidelity_prints_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategies", "--fidelity"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == fidelity_text().strip()
    assert "memory=latest" in out and "to restore: -o payload=private" in out


def test_the_fidelity_page_shows_the_same_list() -> None:
    """docs/fidelity.md holds the list as core/methods/fidelity.py generates it: the data lives in code once."""
    from core.methods.fidelity import fidelity_markdown

    page = (ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8")
    start = page.index("<!-- fidelity:start")
    block = page[page.index("\n", start) + 1 : page.index("<!-- fidelity:end -->")].strip()
    assert block == fidelity_markdown().strip()


async def test_a_session_records_the_options_its_method_ran_with(demo_server: Any, embedder: Any) -> None:
    from core.runtime.config import Settings
    from core.sessions.model import session_from_events
    from tests.support.engine import run_swarm

    settings = Settings(strategy="dytopo", max_rounds=1, strategy_options={"dytopo": {"memory": "latest"}})
    _, events, _ = await run_swarm(demo_server, embedder, settings=settings, timeout=120)
    session = session_from_events(events)
    assert session.metadata.method_options == {
        "payload": "auto", "memory": "latest", "prompt_order": "conversation", "descriptor_context": "full"}
    assert session.to_dict()["metadata"]["method_options"]["memory"] == "latest"


# --- each switch, observed in what the run sends ---------------------------------------------------


def _script(info: Any) -> str:
    """The demo, except that DyTopo's Manager never halts before max_rounds (later rounds are where memory
    shows) and TopoWeaver's orchestrator writes no plan (what its fallback option is for)."""
    import json

    from core.demo.scripts import demo_script
    from core.methods.topoweaver.prompts import CALL_ORCHESTRATE
    from core.runtime.events import CallKind

    if info.call == CALL_ORCHESTRATE:
        return "no plan today"
    reply = demo_script(info)
    if info.call == CallKind.MANAGER:
        decision = json.loads(reply)
        decision["terminate"] = False
        return json.dumps(decision)
    return reply


async def _requests(method: str, options: dict[str, Any], embedder: Any) -> list[tuple[str, str, str]]:
    """(call, role, body) of every request a demo run of ``method`` with ``options`` sent."""
    import asyncio

    from core.compose.plan import BackendChoice
    from core.compose.runner import build_engine, open_backend
    from core.demo.scripts import DEMO_PROBLEMS
    from core.demo.server import ScriptedServer
    from core.methods.dmoa.ttt import reset_ttt
    from core.runtime.config import Settings

    reset_ttt()  # test-time training counts runs per process: each run here starts afresh
    domain = "code" if method == "topoweaver" else "math"
    settings = Settings(domain=domain, strategy=method, strategy_options={method: options}, max_rounds=3,
                        max_retries=0)
    with ScriptedServer(_script) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        try:
            engine = build_engine(DEMO_PROBLEMS[domain], settings, backend, [], embedder=embedder)
            finished = await asyncio.wait_for(engine.run(), timeout=120)  # a hang guard, not a speed test
        finally:
            await backend.close()
        assert finished.reason not in ("error", "cancelled"), (method, options, finished.detail)
        return sorted((r.call, r.role, repr(sorted(r.body.items()))) for r in server.requests)


@pytest.mark.parametrize("entry", OPTION_ENTRIES, ids=lambda d: f"{d.method}-{d.option[0]}")
async def test_each_named_option_changes_what_the_run_sends(entry: Any, embedder: Any, tmp_path: Any) -> None:
    """Not only the method's state: the requests the scripted server receives differ between the paper's
    value and the other one, so the option reaches the model."""
    name, value = entry.option
    info = get_method_info(entry.method)
    spec = info.option(name)
    checked = info.resolve({name: value})[name]
    other = _other_value(spec, checked) if entry.default_is_paper else spec.default
    base = {"dmoa": {"weights_dir": str(tmp_path)}, "topodim": {"weights": str(tmp_path / "policy.pt")}}
    given = base.get(entry.method, {})
    if (entry.method, name) == ("dmoa", "top_logprobs"):
        given = {**given, "collect": True}  # logprobs are asked for on dense steps only
    paper = await _requests(entry.method, {**given, name: checked}, embedder)
    alternative = await _requests(entry.method, {**given, name: other}, embedder)
    assert paper and alternative
    assert paper != alternative, f"-o {name}={checked} and {name}={other} sent the same requests"
