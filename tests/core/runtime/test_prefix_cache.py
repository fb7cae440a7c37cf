"""Issue 36: prompts that only grow. From the scripted server's request log: each worker prompt begins with
the same agent's previous prompt up to that prompt's round-specific tail, so a server's prefix cache
(llama.cpp slots, vLLM prefix caching) prefills what an agent already sent once; the paper order stays
available and sends the same text."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest

from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.runtime.config import Settings
from core.runtime.events import CallKind
from core.runtime.prompts import WORKER_ASKS, problem_digest
from core.runtime.scripted import RequestInfo
from tests.support.engine import changing_replies, run_swarm


def _text(request: RequestInfo) -> str:
    """The messages as a chat template lays them out: one block per message, in order."""
    return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in request.messages)


async def _log(embedder: Any, protocol: str, **options: str) -> list[RequestInfo]:
    """The per-request layouts' log (-o prompt_order=cache unless given; the default conversation:
    tests/core/runtime/test_conversation.py)."""
    options = {"prompt_order": "cache", **options}
    settings = Settings(max_rounds=3, protocol=protocol, convergence_threshold=None,
                        strategy_options={"dytopo": options})
    with ScriptedServer(changing_replies) as server:
        finished, _, _ = await run_swarm(server, embedder, settings=settings)
        requests = [r for r in server.requests if r.role]
    assert finished.reason == "max_rounds", finished.detail
    return requests


def _calls(requests: list[RequestInfo], call: str) -> dict[str, list[RequestInfo]]:
    by_agent: dict[str, list[RequestInfo]] = {}
    for r in requests:
        if r.call == call:
            by_agent.setdefault(r.role, []).append(r)
    return by_agent


@pytest.mark.parametrize(("protocol", "call"), [("single-pass", CallKind.SINGLE_PASS), ("phased", CallKind.WORK)])
async def test_each_round_begins_with_the_agents_previous_prompt(embedder: Any, protocol: str, call: str) -> None:
    requests = await _log(embedder, protocol)
    by_agent = _calls(requests, call)
    assert len(by_agent) == 4 and all(len(calls) == 3 for calls in by_agent.values())
    for agent, calls in by_agent.items():
        for before, after in itertools.pairwise(calls):
            earlier, later = _text(before), _text(after)
            # Up to the round's own tail (its goal, inbox and ask): role, problem and the memory so far.
            stable = earlier[: earlier.index(f"ROUND {before.round} GOAL:")]
            assert later.startswith(stable), (agent, before.round)
            if before.round >= 2:  # round 1 has no memory yet
                assert "YOUR MEMORY" in stable, (agent, before.round)
        # What round 1 said and did is in round 3's prompt, before round 3's goal.
        last = _text(calls[-1])
        assert last.index(f"[{agent}, round 1]") < last.index("ROUND 3 GOAL:")


async def test_a_rounds_work_call_begins_with_its_descriptor_call_up_to_the_ask(embedder: Any) -> None:
    """Both see the agent's whole state (eq. 1) and the round's goal; only the instruction differs."""
    requests = await _log(embedder, "phased")
    work, descriptors = _calls(requests, CallKind.WORK), _calls(requests, CallKind.DESCRIPTORS)
    assert len(descriptors) == 4 and all(len(calls) == 2 for calls in descriptors.values())  # rounds 2 and 3
    for agent, calls in descriptors.items():
        for described in calls:
            (worked,) = [w for w in work[agent] if w.round == described.round]
            asked = _text(described)
            stable = asked[: asked.index(WORKER_ASKS[CallKind.DESCRIPTORS])]
            assert f"ROUND {described.round} GOAL:" in stable and "YOUR MEMORY" in stable, agent
            assert _text(worked).startswith(stable), (agent, described.round)
            # ... and the next round's descriptor call begins with this round's work call up to its goal.
            later = [d for d in calls if d.round == described.round + 1]
            if later:
                done = _text(worked)
                assert _text(later[0]).startswith(done[: done.index(f"ROUND {described.round} GOAL:")])


async def test_the_round_economy_shows_a_descriptor_call_the_problems_opening_and_last_round(
    embedder: Any,
) -> None:
    requests = await _log(embedder, "phased", descriptor_context="round")
    head = problem_digest(DEMO_PROBLEMS["code"])
    late = [r for r in requests if r.call == CallKind.DESCRIPTORS and r.round == 3]
    assert late
    for r in late:
        text = _text(r)
        assert f"PROBLEM:\n{head}" in text and DEMO_PROBLEMS["code"].strip() not in text
        assert "[round 2," in text and "[round 1," not in text  # the last round's memory only


@pytest.mark.parametrize("protocol", ["single-pass", "phased"])
async def test_the_paper_order_sends_the_same_text_in_another_order(embedder: Any, protocol: str) -> None:
    cache = await _log(embedder, protocol)
    paper = await _log(embedder, protocol, prompt_order="paper")

    def pieces(requests: list[RequestInfo]) -> Counter[tuple[str, str, int, str]]:
        """Each request's lines (blank lines aside), by agent, call and round: what it was told."""
        return Counter(
            (r.role, r.call, r.round, line)
            for r in requests
            for m in r.messages
            for line in str(m["content"]).splitlines()
            if line.strip()
        )

    assert pieces(cache) == pieces(paper)
    # ... and the order differs: in the paper's, the round's goal comes before the memory.
    late = [r for r in paper if r.call in (CallKind.WORK, CallKind.SINGLE_PASS) and r.round == 3]
    assert late and all(
        r.messages[-1]["content"].index("GOAL:") < r.messages[-1]["content"].index("YOUR MEMORY") for r in late
    )


# --- cached tokens, read from the server and shown ------------------------------------------------------------


async def _cached_run(embedder: Any, llama_slots: str = "server", **server: Any
                      ) -> tuple[Any, list[Any], list[RequestInfo]]:
    from core.runtime import events as ev

    settings = Settings(max_rounds=3, llama_slots=llama_slots)  # type: ignore[arg-type]  # its text, as in a config
    with ScriptedServer(changing_replies, ServerBehaviour(**server)) as scripted:
        finished, events, _ = await run_swarm(scripted, embedder, settings=settings)
        requests = [r for r in scripted.requests if r.role]
    return finished, [e for e in events if isinstance(e, ev.AgentFinished)], requests


@pytest.mark.parametrize("style", ["llama.cpp", "openai"])
async def test_cached_tokens_are_read_per_call_and_summed_for_the_run(embedder: Any, style: str) -> None:
    finished, calls, _ = await _cached_run(embedder, prefix_cache=style)
    assert all(c.cached_tokens is not None for c in calls)
    assert [c.cached_tokens for c in calls if c.round == 1 and c.call != "manager"] == [0] * 5  # nothing seen yet
    assert finished.cached_tokens == sum(c.cached_tokens or 0 for c in calls) > 0
    assert finished.cached_tokens < finished.prompt_tokens
    # The record keeps them: an event read back from its dict is the same.
    from core.runtime.events import event_from_dict

    assert event_from_dict(finished.to_dict()) == finished


async def test_a_server_that_says_nothing_is_not_reported_rather_than_zero(embedder: Any) -> None:
    finished, calls, _ = await _cached_run(embedder)
    assert finished.cached_tokens is None and all(c.cached_tokens is None for c in calls)
    assert "cached_tokens" not in finished.to_dict() and "cached_tokens" not in calls[0].to_dict()


async def test_by_default_the_llama_cpp_server_places_every_call(embedder: Any) -> None:
    """A llama-server with a host prompt cache finds each agent's conversation (and the team's preamble) in
    whatever slot it places a call; a named slot is never looked up there (SlotPlacement)."""
    _, _, requests = await _cached_run(embedder, prefix_cache="llama.cpp", slots=5)
    assert len({r.role for r in requests}) == 5 and all("id_slot" not in r.body for r in requests)


async def test_per_agent_slots_keep_each_agent_on_its_own_slot_when_there_are_enough(embedder: Any) -> None:
    _, _, requests = await _cached_run(embedder, "per-agent", prefix_cache="llama.cpp", slots=5)
    slots: dict[str, set[int]] = {}
    for r in requests:
        slots.setdefault(r.role, set()).add(r.body["id_slot"])
    assert len(slots) == 5 and all(len(s) == 1 for s in slots.values())
    assert len({next(iter(s)) for s in slots.values()}) == 5  # one slot each, none shared


async def test_with_fewer_slots_than_agents_the_server_chooses(embedder: Any) -> None:
    _, _, requests = await _cached_run(embedder, "per-agent", prefix_cache="llama.cpp", slots=2)
    assert requests and all("id_slot" not in r.body for r in requests)


def test_the_headless_summary_says_what_was_cached(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import tui.cli.headless as headless

    for style, expected in (("llama.cpp", "prompt cache: cached "), (None, "prompt cache: not reported")):
        with ScriptedServer(demo_script, ServerBehaviour(prefix_cache=style)) as server:
            settings = Settings(max_rounds=2, base_url=server.base_url, sessions_dir=str(tmp_path))
            code = headless.run_headless(DEMO_PROBLEMS["code"], settings, demo=False, json_lines=False, save=None,
                                         expect=None)
        out = capsys.readouterr()
        assert code == 0
        line = next(x for x in (out.out + out.err).splitlines() if x.startswith("finished:"))
        assert expected in line, line
        if style:
            assert line.rstrip().endswith("%)"), line  # "cached N (x %)"


def test_the_run_header_shows_the_cached_share_only_when_the_server_reports_it() -> None:
    from core.runtime import events as ev
    from tui.model import RunModel
    from tui.widgets.header import _tokens

    model = RunModel()
    model.apply(ev.AgentFinished(round=1, agent="Developer", call="work", status="done", prompt_tokens=1000,
                                 completion_tokens=200))
    assert _tokens(model) == "1,200 tok"
    model.apply(ev.AgentFinished(round=2, agent="Developer", call="work", status="done", prompt_tokens=1000,
                                 completion_tokens=200, cached_tokens=500))
    assert _tokens(model) == "2,400 tok, cached 500 (25 %)"
    assert _tokens(model, compact=True) == "2,400 tok, 25 % cached"


def test_compare_and_bench_rows_say_cached_or_not_reported() -> None:
    from core.bench.runner import Row, format_table, summarize
    from core.compose.compare import summary_rows
    from core.sessions.compare_record import CompareRow
    from tui.cli.compare_headless import format_summary

    rows = [CompareRow("dytopo", prompt_tokens=4000, cached_tokens=3000), CompareRow("single", prompt_tokens=900)]
    assert [r["cached"] for r in summary_rows(rows)] == ["cached 3,000 (75 %)", "not reported"]
    table = format_summary(rows)
    assert "prompt cache" in table and "cached 3,000 (75 %)" in table and "not reported" in table
    bench = [Row("t1", "dytopo", "code", True, 3, 4000, 500, 1.0, "manager", cached_tokens=1000),
             Row("t1", "single", "code", True, 1, 900, 100, 0.5, "answered")]
    text = format_table(summarize(bench, ["dytopo", "single"]))
    assert "cached 1,000 (25 %)" in text and "not reported" in text


def test_runs_sharing_one_client_leave_the_slot_to_the_server() -> None:
    """A comparison or a benchmark's concurrency runs several teams on one client, their agents sharing names:
    pinning "Developer" to one slot would queue every team's Developer there, so no slot is named then."""
    from core.llm.client import LLMClient

    client = LLMClient("http://127.0.0.1:9/v1", "no-key", model="m")
    client.total_slots, client.slot_table.per_agent = 5, True
    first = client.plan_slots(["Manager", "Developer", "Tester"])
    assert client.slots == {"Manager": 0, "Developer": 1, "Tester": 2}
    second = client.plan_slots(["Manager", "Developer"])
    assert client.slots == {}
    client.release_slots(first)
    assert client.slots == {"Manager": 0, "Developer": 1}  # the one run left keeps its agents apart again
    client.release_slots(second)
    assert client.plan_slots(["A", "B", "C", "D", "E", "F"]) and client.slots == {}  # more agents than slots


def _reusable_and_bound(requests: list[RequestInfo]) -> tuple[float, float]:
    """(share of prompt characters that begin with the same agent's previous prompt, the share its previous
    prompt already held in whole lines: what an append-only layout of the same content could reuse at best)."""
    last: dict[str, str] = {}
    chars = prefix = bound = 0
    for r in requests:
        text = _text(r)
        chars += len(text)
        previous = last.get(r.role)
        if previous is not None:
            prefix += next((i for i, (a, b) in enumerate(zip(previous, text, strict=False)) if a != b),
                           min(len(previous), len(text)))
            have = Counter(previous.splitlines(keepends=True))
            for line in text.splitlines(keepends=True):
                if have[line] > 0:
                    have[line] -= 1
                    bound += len(line)
        last[r.role] = text
    return prefix / chars, bound / chars


@pytest.mark.parametrize("method", ["topodim", "dmoa", "topoweaver"])
async def test_each_method_reuses_within_five_points_of_its_append_only_bound(embedder: Any, method: str,
                                                                            tmp_path: Any) -> None:
    options = {"dmoa": {"weights_dir": str(tmp_path)}, "topodim": {"weights": str(tmp_path / "policy.pt")}}
    settings = Settings(strategy=method, max_rounds=3, strategy_options={method: options.get(method, {})})
    with ScriptedServer(demo_script) as server:
        await run_swarm(server, embedder, settings=settings)
        requests = [r for r in server.requests if r.role]
    reusable, bound = _reusable_and_bound(requests)
    assert len({r.role for r in requests}) > 1 and bound > 0.2, (method, bound)
    assert reusable >= bound - 0.05, (method, round(reusable, 3), round(bound, 3))


@pytest.mark.parametrize("protocol", ["single-pass", "phased"])
async def test_dytopo_reuses_within_five_points_of_its_append_only_bound(embedder: Any, protocol: str) -> None:
    """Replies that change every round: what is left to prefill is what is new, bar the round's goal and ask
    (a phased descriptor call that saw less than its work call would sit about 20 points under)."""
    reusable, bound = _reusable_and_bound(await _log(embedder, protocol))
    assert bound > 0.3, bound
    assert reusable >= bound - 0.05, (protocol, round(reusable, 3), round(bound, 3))


async def test_the_round_economy_breaks_the_work_calls_prefix(embedder: Any) -> None:
    """The other side of the check above: the economy's descriptor call pushes the work prompt out."""
    reusable, bound = _reusable_and_bound(await _log(embedder, "phased", descriptor_context="round"))
    assert reusable < bound - 0.1, (round(reusable, 3), round(bound, 3))
