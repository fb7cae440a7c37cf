"""Issue 44 for TopoWeaver-R1's plan, TopoDIM's and DMoA's calls: a model that copies the reply shape (or, where
a call shows none, repeats its instructions) is asked once more, counted as copied and never as parsed, and
nothing it wrote is passed on: no plan runs, no graph is built from it, nothing is aggregated, no answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.copycat import copycat_script
from core.demo.scripts import DEMO_PROBLEMS
from core.demo.server import ScriptedServer
from core.methods.dmoa.prompts import (
    PoolAgent,
    agent_request,
    agent_system_prompt,
    parse_selection,
    selector_system_prompt,
    summarizer_instructions,
)
from core.methods.topodim.generators import parse_prior
from core.methods.topodim.prompts import prior_messages
from core.methods.topoweaver.copies import plan_reply
from core.methods.topoweaver.prompts import orchestrator_system_prompt
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.parsing import TemplateCopied, is_template_copy, own_text
from core.runtime.rosters import builtin_team
from core.runtime.scripted import RequestInfo

# Each method with the options that make it call the model wherever it can (the LLM Selector, the prior).
METHODS = {
    "topoweaver": {},
    "topodim": {"generator": "prior"},
    "dmoa": {"router": "llm", "l_max": 2},
}


async def _run(method: str, options: dict[str, Any], embedder: Any, script: Any = copycat_script,
               domain: str = "code") -> tuple[ev.RunFinished, list[ev.Event], list[RequestInfo]]:
    settings = Settings(domain=domain, strategy=method, strategy_options={method: options}, execute_code=False)
    events: list[ev.Event] = []
    with ScriptedServer(script) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        try:
            engine = build_engine(DEMO_PROBLEMS[domain], settings, backend, [events.append], embedder=embedder)
            finished = await asyncio.wait_for(engine.run(), timeout=120)  # a guard against hangs
        finally:
            await backend.close()
        return finished, events, list(server.requests)


def _info(messages: list[dict[str, str]], call: str = "x") -> RequestInfo:
    return RequestInfo("A", call, 1, "code", False, messages, {})


def test_each_methods_shape_copied_verbatim_is_refused() -> None:
    ask = "PROBLEM:\nx\n\nWrite the plan for turn 1 of at most 2."
    plan = copycat_script(_info([{"role": "system", "content": orchestrator_system_prompt("code", 2)},
                                 {"role": "user", "content": ask}]))
    with pytest.raises(TemplateCopied):
        plan_reply(plan)
    prior = copycat_script(_info(prior_messages("Manager", {r.name: r for r in builtin_team("code").workers}, "code",
                                                "x", ["conditioned", "feedback"])))
    with pytest.raises(TemplateCopied):
        parse_prior(prior)
    pool = [PoolAgent("Developer", "dev", "writes code"), PoolAgent("Tester", "test", "tests")]
    selection = copycat_script(_info([{"role": "system", "content": selector_system_prompt("code", pool, 2)},
                                      {"role": "user", "content": "Choose up to 2 experts for step 1."}]))
    with pytest.raises(TemplateCopied):
        parse_selection(selection, ["Developer", "Tester"], 2)


def test_a_plain_reply_that_repeats_its_instructions_is_a_copy_and_its_own_text_is_not() -> None:
    agent = PoolAgent("Developer", "Developer", "writes code")
    system = agent_system_prompt("code", agent)
    user = agent_request("Developer", 2, None, [("Tester", "f(0) fails: return 1 for 0")])
    parse = own_text([system, "Give your contribution to step 2 from your role."])
    echoed = copycat_script(_info([{"role": "system", "content": system}, {"role": "user", "content": user}]))
    with pytest.raises(TemplateCopied):
        parse(echoed)
    assert parse("def f(x):\n    return 1 if x == 0 else x").startswith("def f")
    # A teammate's quoted work is not the app's instructions: repeating it is not a copy of the template.
    assert parse("f(0) fails: return 1 for 0") == "f(0) fails: return 1 for 0"
    assert parse("ok") == "ok"  # too short to be a copy of anything
    # An answer that happens to match an example inside a sentence of the instructions is the model's own.
    summary = own_text(summarizer_instructions("math", 1, 3))
    assert summary("[FINAL] \\frac{14}{3}") == "[FINAL] \\frac{14}{3}"
    with pytest.raises(TemplateCopied):
        summary("Step 1 of at most 3. Reply with [FINAL] and the answer, or with [CONTINUE].")


@pytest.mark.parametrize("method", sorted(METHODS))
async def test_a_copycat_model_drives_each_method_to_an_honest_end(embedder: Any, method: str) -> None:
    finished, events, requests = await _run(method, METHODS[method], embedder)
    assert finished.replies_total > 0
    assert finished.replies_parsed == 0 and finished.replies_copied == finished.replies_total
    assert not finished.final_answer.strip() and finished.answer_source in ("", "none")
    # Each copy was asked for once more, with one plain line saying what was wrong.
    reasks = [r for r in requests if r.is_repair]
    assert len(reasks) == finished.replies_total
    assert all("the reply repeated the instructions" in str(r.messages[-1]["content"]) for r in reasks)
    calls = [e for e in events if isinstance(e, ev.AgentFinished)]
    assert calls and all(e.status == ev.CallStatus.UNPARSED and is_template_copy(e.error) for e in calls)
    assert all(not e.public for e in calls)  # no copy shown as work, passed on or aggregated
    notices = [e.message for e in events if isinstance(e, ev.Notice)]
    assert any("copied the reply template" in n for n in notices)
    assert all(not g.routing.get("edges") for g in events if isinstance(g, ev.TopologyBuilt))
    # Nobody read a copy: no other call's request quotes a copied shape.
    copies = {(e.agent, e.call, e.round): e.raw.strip() for e in calls if "<" in e.raw}
    assert copies
    assert not any(copy in str(m.get("content")) for r in requests if not r.is_repair
                   for m in r.messages if m.get("role") == "user"
                   for call, copy in copies.items() if call != (r.role, r.call, r.round))
