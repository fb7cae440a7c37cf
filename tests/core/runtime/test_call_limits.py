"""Every kind of call has its own max_tokens and temperature: the config file's [manager_call], [work_call] and
[descriptor_call] tables, overlaid per method by KIND_max_tokens / KIND_temperature options (-o or
[strategy.NAME]), all capped by --max-tokens. What reaches the server is what was configured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from core.methods.catalogue import build_method, get_method_info
from core.methods.registry import MethodError, parse_option_flags
from core.runtime.config import CallLimits, ConfigError
from core.runtime.config_file import load_settings
from core.runtime.rosters import builtin_team
from tests.support.engine import run_swarm

# Each method's call kinds, and who (role, call) makes them on the demo script.
KINDS: dict[str, dict[str, set[tuple[str, str]]]] = {
    "dytopo": {"manager": {("Manager", "plan"), ("Manager", "manager")},
               "worker": {("Solver", "work")}, "descriptor": {("Solver", "descriptors")}},
    "single": {"agent": {("Solo", "single")}},
    "dmoa": {"agent": {("Solver", "dmoa-step")}, "summarizer": {("Summarizer", "dmoa-summarize")},
             "selector": {("Selector", "dmoa-select")}},
    "topodim": {"agent": {("Solver", "solution")}, "decider": {("Manager", "typed-graph"), ("Manager", "final")}},
    "topoweaver": {"orchestrator": {("Orchestrator", "tw-orchestrate")}, "agent": {("thinker_1", "tw-agent")}},
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_the_config_file_sets_each_table_and_each_methods_call_kinds(tmp_path: Path) -> None:
    path = write(tmp_path, """
[swarm]
manager_call = { temperature = 0.4, max_tokens = 700 }
work_call = { max_tokens = 900 }

[strategy.dmoa]
summarizer_max_tokens = 300
summarizer_temperature = 0.0
""")
    settings = load_settings(path)
    assert settings.manager_call == CallLimits(0.4, 700)
    assert settings.work_call == CallLimits(0.3, 900)  # the temperature left out keeps its default
    method = build_method("dmoa", settings.strategy_options["dmoa"], builtin_team("math"))
    assert method.options["summarizer_max_tokens"] == 300  # type: ignore[attr-defined]
    assert method.options["summarizer_temperature"] == 0.0  # type: ignore[attr-defined]
    assert "selector_max_tokens" not in method.options  # type: ignore[attr-defined]  # unset: the table's


def test_option_flags_are_typed_and_checked() -> None:
    info = get_method_info("topoweaver")
    values = info.resolve(parse_option_flags(["orchestrator-max-tokens=250", "agent_temperature=0.9"]))
    assert values["orchestrator_max_tokens"] == 250 and values["agent_temperature"] == 0.9
    for bad, said in (("orchestrator_max_tokens=0", "between 1"), ("agent_temperature=3", "between 0.0 and 2.0"),
                      ("orchestrator_max_tokens=lots", "a whole number"), ("summarizer_max_tokens=9", "no option")):
        with pytest.raises(MethodError, match=said) as caught:
            info.resolve(parse_option_flags([bad]))
        assert "\n" not in str(caught.value)


def test_a_bad_table_in_the_config_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="manager_call must be a table with temperature and max_tokens"):
        load_settings(write(tmp_path, "[swarm]\nmanager_call = { top_k = 3 }\n"))
    with pytest.raises(ConfigError, match=r"manager_call\.max_tokens must be a whole number"):
        load_settings(write(tmp_path, "[swarm]\nmanager_call = { max_tokens = 'many' }\n"))


@pytest.mark.parametrize("strategy", sorted(KINDS))
async def test_each_call_kind_sends_its_own_limits(embedder: Any, strategy: str, tmp_path: Path) -> None:
    kinds = KINDS[strategy]
    options: dict[str, Any] = {"router": "llm"} if strategy == "dmoa" else {}
    for index, kind in enumerate(kinds):
        options[f"{kind}_max_tokens"] = 101 + index
        options[f"{kind}_temperature"] = round(0.15 + index / 10, 2)
    lines = [f"[strategy.{strategy}]", *(f"{k} = {v!r}".replace("'", '"') for k, v in options.items())]
    settings = load_settings(write(tmp_path, "\n".join(lines) + "\n"), cli={"strategy": strategy, "domain": "math"})
    with ScriptedServer(demo_script) as server:
        finished, _, _ = await run_swarm(server, embedder, settings=settings)
        sent = {(r.role, r.call): (r.body["max_tokens"], r.body["temperature"]) for r in server.requests}
    assert finished.reason != "error", finished.detail
    for index, (kind, callers) in enumerate(kinds.items()):
        for caller in callers:
            assert sent[caller] == (101 + index, round(0.15 + index / 10, 2)), (kind, caller)


async def test_max_tokens_caps_every_call_kind(embedder: Any) -> None:
    settings = load_settings(cli={"strategy": "dmoa", "domain": "math", "max_tokens": 64,
                                  "strategy_options": {"dmoa": {"router": "llm", "summarizer_max_tokens": 500}}})
    with ScriptedServer(demo_script) as server:
        await run_swarm(server, embedder, settings=settings)
        asked = {r.body["max_tokens"] for r in server.requests}
    assert asked == {64}


async def test_unset_call_kinds_use_the_config_tables(embedder: Any) -> None:
    settings = load_settings(cli={"strategy": "dmoa", "domain": "math", "manager_call": CallLimits(0.05, 333),
                                  "work_call": CallLimits(0.6, 444)})
    with ScriptedServer(demo_script) as server:
        await run_swarm(server, embedder, settings=settings)
        sent = {(r.role, r.call): (r.body["max_tokens"], r.body["temperature"]) for r in server.requests}
    assert sent[("Summarizer", "dmoa-summarize")] == (333, 0.05)
    assert sent[("Solver", "dmoa-step")] == (444, 0.6)


@pytest.mark.parametrize("strategy", sorted(KINDS))
def test_a_method_hands_the_engine_the_table_of_each_call_kind_its_options_name(strategy: str) -> None:
    method = build_method(strategy, None, builtin_team("math"))
    tables = {spec.name.removesuffix("_max_tokens"): spec.call_table
              for spec in get_method_info(strategy).options if spec.name.endswith("_max_tokens")}
    assert dict(method.call_tables) == tables and set(tables) == set(KINDS[strategy])
