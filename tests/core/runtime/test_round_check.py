"""Code execution during a run: the Manager cannot end a code run as solved while the tests fail."""

from __future__ import annotations

import json
from typing import Any

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.scripts import DEMO_PROBLEMS
from core.demo.server import RequestInfo, ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.round_check import CodeExecutionEvaluator
from tests.support.engine import of

BROKEN = "```python\ndef make_palindrome(string: str) -> str:\n    return string\n```"
FIXED = (
    "```python\ndef is_palindrome(s: str) -> bool:\n    return s == s[::-1]\n\n"
    "def make_palindrome(string: str) -> str:\n    for i in range(len(string)):\n"
    "        if is_palindrome(string[i:]):\n            return string + string[:i][::-1]\n"
    "    return string\n```"
)


def _eager_manager(info: RequestInfo) -> str:
    """The Manager always claims success; the Developer only fixes the code in round 2."""
    if info.role == "Manager":
        return json.dumps(
            {
                "goal": "Fix it.",
                "terminate": info.call == ev.CallKind.MANAGER,
                "reasoning": "Looks done.",
                "final_answer": "done",
            }
        )
    if info.call == ev.CallKind.DESCRIPTORS:
        return json.dumps({"query": "I need code.", "key": f"I provide {info.role} work."})
    public = {
        "Developer": BROKEN if info.round == 1 else FIXED,
        "Tester": "```python\nassert make_palindrome('cat') == 'catac'\n```",
    }.get(info.role, "ok")
    return json.dumps({"public": public, "private": {}, "query": "I need code.", "key": "I give tests."})


async def _run(settings: Settings, evaluator: Any) -> tuple[ev.RunFinished, list[ev.Event], ScriptedServer]:
    server = ScriptedServer(_eager_manager).start()
    backend = await open_backend(settings, BackendChoice(server=server))
    events: list[ev.Event] = []
    engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [events.append], evaluator=evaluator)
    finished = await engine.run()
    await backend.close()
    return finished, events, server


async def test_failing_tests_keep_the_run_going_until_they_pass(embedder: Any) -> None:
    finished, events, server = await _run(Settings(max_rounds=4), CodeExecutionEvaluator())
    runs = of(events, ev.TestRun)
    assert [r.outcome for r in runs] == ["WRONG_ANSWER", "PASSED"]
    assert "make_palindrome('cat')" in runs[0].failing_test
    assert finished.reason == "manager" and finished.rounds == 2 and finished.solved is True
    # The test results reached the Manager and, next round, the workers.
    manager_r1 = [r for r in server.requests if r.role == "Manager" and r.call == ev.CallKind.MANAGER and r.round == 1]
    assert "TEST RESULTS" in manager_r1[0].messages[-1]["content"]
    dev_r2 = [r for r in server.requests if r.role == "Developer" and r.round == 2 and r.call == ev.CallKind.WORK]
    # In the Developer's conversation: its round-2 descriptor turn brought them, before this work turn.
    assert "WRONG_ANSWER" in "\n".join(str(m["content"]) for m in dev_r2[0].messages)
    server.stop()


async def test_run_ending_at_max_rounds_with_failing_tests_is_unsolved(embedder: Any) -> None:
    finished, events, server = await _run(Settings(max_rounds=1), CodeExecutionEvaluator())
    assert finished.reason == "manager" and finished.solved is False
    assert [r.passed for r in of(events, ev.TestRun)] == [False]
    server.stop()


async def test_without_execution_the_manager_claim_stands(embedder: Any) -> None:
    finished, events, server = await _run(Settings(max_rounds=4), None)
    assert finished.rounds == 1 and finished.solved is None and not of(events, ev.TestRun)
    server.stop()


async def test_code_without_isolation_is_announced_once_per_run(monkeypatch: Any) -> None:
    from core.evaluation import sandbox
    from core.evaluation.sandbox import isolation
    from core.runtime.engine import AgentResult

    monkeypatch.setenv(sandbox.ISOLATION_ENV, "off")
    isolation.probe_isolation.cache_clear()
    monkeypatch.setattr(isolation, "_ALLOWED_PROCESS", True)  # accepted (--allow-unisolated-code): it runs, says so
    try:
        evaluator = CodeExecutionEvaluator()
        outputs = {"Developer": AgentResult("Developer", "done", public=FIXED)}
        first = await evaluator.evaluate(1, DEMO_PROBLEMS["code"], outputs)
        second = await evaluator.evaluate(2, DEMO_PROBLEMS["code"], outputs)
    finally:
        isolation.probe_isolation.cache_clear()
    assert first is not None and second is not None
    notices = [e for e in first.events if isinstance(e, ev.Notice)]
    assert len(notices) == 1 and "without isolation" in notices[0].message
    assert not [e for e in second.events if isinstance(e, ev.Notice)]
    assert first.passed  # the fallback still runs and judges the code
