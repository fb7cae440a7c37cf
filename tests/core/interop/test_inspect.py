"""Every method as inspect_ai's solver ``swarm_tui/swarm`` (issue 43, item 3): ``inspect eval`` on a two-sample
local task, with inspect's own model (the openai-api provider) pointed at the project's scripted server, scores
both samples; the swarm's story is in each sample's transcript and metadata; a session exports as an eval log
``read_eval_log`` opens. The inspect extra runs in its own environment (.ci/run), so these tests are marked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from core.methods.catalogue import method_names
from tests.support.paths import ROOT

pytestmark = pytest.mark.inspect
inspect_log = pytest.importorskip("inspect_ai.log", reason="the inspect extra is not installed")
TASK = Path(__file__).with_name("swarm_task.py")


def inspect_eval(server: ScriptedServer, log_dir: Path, *solver_args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "SCRIPTED_BASE_URL": server.base_url,
           "SCRIPTED_API_KEY": "not-needed", "INSPECT_DISPLAY": "none", "INSPECT_LOG_DIR": str(log_dir)}
    return subprocess.run(
        [sys.executable, "-m", "inspect_ai", "eval", f"{TASK}@two_samples", "--model",
         "openai-api/scripted/scripted-demo", "--solver", "swarm_tui/swarm", *solver_args, "--log-format", "eval"],
        capture_output=True, text=True, timeout=600, env=env, cwd=ROOT,
    )


def check_log(log: Any, method: str) -> None:
    """Both samples scored, each with the swarm's answer, its story in the transcript and metadata, and the
    calls as inspect's own model events with their usage."""
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 2
    for sample in log.samples:
        assert sample.scores, f"{method}: sample {sample.id} was not scored"
        story = sample.metadata["swarm"]
        assert story["method"] == method and story["domain"] == "math"
        assert sample.output.completion.strip(), f"{method}: no answer for {sample.id}"
        infos = [e for e in sample.events if e.event == "info" and str(e.source or "").startswith("swarm")]
        assert any(e.source == "swarm end" for e in infos)
        assert [e for e in sample.events if e.event == "model"], "the calls are inspect's own model events"
        assert sample.model_usage, "inspect counted the swarm's usage"


def test_inspect_eval_runs_the_solver_by_its_name_and_scores_both_samples(tmp_path: Path) -> None:
    with ScriptedServer(demo_script) as server:
        result = inspect_eval(server, tmp_path, "-S", "method=dytopo", "-S", "max_rounds=2")
        swarm_calls = [r for r in server.requests if r.call]
    assert result.returncode == 0, result.stderr[-2000:] + result.stdout[-2000:]
    assert swarm_calls, "the swarm's calls reached the model through inspect, with their identity"
    logs = inspect_log.list_eval_logs(str(tmp_path))
    assert len(logs) == 1
    log = inspect_log.read_eval_log(logs[0])
    check_log(log, "dytopo")
    assert all(s.scores and next(iter(s.scores.values())).value == "C" for s in log.samples or [])
    graphs = [g for s in log.samples or [] for g in s.metadata["swarm"]["graphs"]]
    assert graphs and all("edges" in g for g in graphs)


def test_every_method_is_a_solver_that_scores_both_samples(tmp_path: Path) -> None:
    methods = method_names()
    script = (
        "import sys\n"
        "from inspect_ai import eval\n"
        "from tests.core.interop.swarm_task import two_samples\n"
        f"logs = eval([two_samples(method=m) for m in {methods!r}], model='openai-api/scripted/scripted-demo',\n"
        f"            log_dir={str(tmp_path)!r}, display='none', max_tasks=2)\n"
        "print(len(logs))\n"
    )
    with ScriptedServer(demo_script) as server:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "SCRIPTED_BASE_URL": server.base_url,
               "SCRIPTED_API_KEY": "not-needed"}
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900,
                                env=env, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    logs = [inspect_log.read_eval_log(p) for p in inspect_log.list_eval_logs(str(tmp_path))]
    by_method = {log.eval.task_args["method"]: log for log in logs}
    assert sorted(by_method) == sorted(methods)
    for method, log in by_method.items():
        check_log(log, method)


def test_a_bad_solver_option_fails_the_eval_with_one_line(tmp_path: Path) -> None:
    with ScriptedServer(demo_script) as server:
        result = inspect_eval(server, tmp_path, "-S", "method=no-such-method")
        sent = [r for r in server.requests if r.call]
    said = result.stderr + result.stdout
    logs = inspect_log.list_eval_logs(str(tmp_path))
    if logs:  # inspect records the failed eval; either way it names the method and no call went out
        log = inspect_log.read_eval_log(logs[0])
        assert log.status == "error" and log.error is not None
        said += log.error.message
    else:
        assert result.returncode != 0
    assert "no-such-method" in said and not sent


def test_a_session_exports_as_an_eval_log_inspect_reads(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "SWARM_TUI_SESSIONS_DIR": str(sessions)}
    run = subprocess.run([sys.executable, "-m", "tui", "--headless", "--demo", "--max-rounds", "2"],
                         capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-1500:]
    session = next(sessions.glob("*.json"))
    out = tmp_path / "run.eval"
    exported = subprocess.run([sys.executable, "-m", "tui", "export", str(session), "--format", "inspect", "-o",
                               str(out)], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert exported.returncode == 0, exported.stderr
    log = inspect_log.read_eval_log(str(out))
    assert log.samples is not None and len(log.samples) == 1
    sample = log.samples[0]
    recorded = json.loads(session.read_text(encoding="utf-8"))["events"]
    finished = next(e for e in recorded if e["type"] == "run_finished")
    assert sample.output.completion == finished["final_answer"] and sample.input == recorded[0]["problem"]
    graphs = [e for e in recorded if e["type"] == "topology_built"]
    assert len(sample.metadata["swarm"]["graphs"]) == len(graphs) > 0
    assert [e.source for e in sample.events if e.event == "info"][-1] == "swarm end"
