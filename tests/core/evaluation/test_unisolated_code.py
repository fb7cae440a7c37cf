"""Model-written code never runs without isolation unless the user accepts it, and the app's own environment
(the API key) stays out of reach of same-user processes: refused by default with one line (why, and how to
get isolation), run with --allow-unisolated-code / allow_unisolated_code = true / the MCP option, and with
the app non-dumpable (prctl PR_SET_DUMPABLE 0) a same-user process cannot read its /proc/<pid>/environ."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.evaluation import sandbox
from core.evaluation.sandbox import IsolationRefused, Outcome, isolation, run_code
from core.runtime import events as ev
from core.runtime.engine import AgentResult, RunAborted
from core.runtime.round_check import CodeExecutionEvaluator
from core.runtime.scripted import RequestInfo
from tests.support.paths import ROOT

INC = "def inc(x):\n    return x + 1\n"


@pytest.fixture
def no_isolation(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(sandbox.ISOLATION_ENV, "off")
    monkeypatch.setattr(isolation, "_ALLOWED_PROCESS", False)  # the suite accepts it (conftest): not here
    isolation.probe_isolation.cache_clear()
    yield
    monkeypatch.undo()
    isolation.probe_isolation.cache_clear()


def swarm(*args: str, env: dict[str, str] | None = None, python: list[str] | None = None,
          cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(python or [sys.executable]), "-m", "tui", *args], capture_output=True, text=True, timeout=300,
        cwd=cwd, env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), **(env or {})},
    )


# --- the sandbox ------------------------------------------------------------------------------------------


def test_code_is_refused_without_isolation_by_default_with_one_line_saying_how(no_isolation: None) -> None:
    with pytest.raises(IsolationRefused) as info:
        run_code(INC, ["assert inc(1) == 2"])
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("model-written code is not run without isolation (turned off by SWARM_SANDBOX_ISOLATION)")
    assert "apt-get install bubblewrap" in message and "--allow-unisolated-code" in message
    assert "allow_unisolated_code = true" in message


def test_the_opt_in_runs_it(no_isolation: None) -> None:
    isolation.allow_unisolated_code(True)
    assert run_code(INC, ["assert inc(1) == 2"]).outcome is Outcome.PASSED


async def test_a_run_that_executes_code_ends_with_that_line_not_a_traceback(no_isolation: None) -> None:
    outputs = {"Developer": AgentResult("Developer", ev.CallStatus.DONE, public=f"```python\n{INC}```")}
    with pytest.raises(RunAborted, match=r"^model-written code is not run without isolation"):
        await CodeExecutionEvaluator().evaluate(1, DEMO_PROBLEMS["code"], outputs)


# --- the faces: CLI, config, bench, MCP -----------------------------------------------------------------------


def test_execute_without_isolation_stops_before_the_run_and_the_opt_in_runs(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("")
    env = {"SWARM_SANDBOX_ISOLATION": "off", "SWARM_TUI_SESSIONS_DIR": str(tmp_path)}
    base = ["--headless", "--demo", "--execute", "--max-rounds", "1", "--config", str(config), "x"]
    refused = swarm(*base, env=env)
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "model-written code is not run without isolation" in lines[0]
    allowed = swarm(*base, "--allow-unisolated-code", env=env)
    assert allowed.returncode == 0, allowed.stderr
    assert "code runs without isolation: turned off by SWARM_SANDBOX_ISOLATION" in allowed.stderr
    config.write_text("[swarm]\nallow_unisolated_code = true\n")
    assert swarm(*base, env=env).returncode == 0


def test_bench_says_so_before_it_starts(tmp_path: Path) -> None:
    env = {"SWARM_SANDBOX_ISOLATION": "off"}
    config = tmp_path / "config.toml"
    config.write_text("")
    args = ["bench", "humaneval", "--demo", "--limit", "1", "--strategy", "single", "--config", str(config),
            "--out", str(tmp_path / "out")]
    refused = swarm(*args, env=env)
    assert refused.returncode == 2 and "model-written code is not run without isolation" in refused.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()
    allowed = swarm(*args, "--allow-unisolated-code", env=env)
    assert allowed.returncode == 0, allowed.stderr[-800:]
    first = allowed.stderr.strip().splitlines()[0]
    assert first == ("swarm-tui bench: note: code runs without isolation: turned off by SWARM_SANDBOX_ISOLATION "
                     "(--allow-unisolated-code)")


def test_an_mcp_client_must_ask_for_unisolated_code_itself(no_isolation: None) -> None:
    from core.compose.plan import BackendChoice
    from core.mcp.tasks import StartError, SwarmManager
    from core.runtime.config import Settings

    manager = SwarmManager(Settings(), backend=BackendChoice(demo=True))
    with pytest.raises(StartError, match=r"^model-written code is not run without isolation .*option "
                                         r"allow_unisolated_code true"):
        manager.validate("x", "code", options={"execute": True})
    settings, _, _ = manager.validate("x", "code", options={"execute": True, "allow_unisolated_code": True})
    assert settings.execute_code and settings.allow_unisolated_code


# --- the app's own environment -----------------------------------------------------------------------------------


RESTART = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'pass'], check=True)"


def as_another_user(pythons: list[str], probe: str = RESTART) -> tuple[list[str], dict[str, str]]:
    """A command line that runs Python as an unprivileged user (root reads any /proc/<pid>/environ, so a test
    as root proves nothing), and the environment it needs: the first of ``pythons`` that user can run
    ``probe`` with, given this checkout and this interpreter's packages; skips the test when none can."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("runs as root without setpriv: root reads every /proc/<pid>/environ, so it proves nothing")
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    # A venv under a private home cannot be entered by that user: another interpreter of the same version
    # with the venv's packages on its path runs the same code.
    env = {"PATH": os.defpath, "PYTHONPATH": os.pathsep.join([str(ROOT), *site.getsitepackages()])}
    for python in pythons:
        trial = subprocess.run([*prefix, python, "-c", probe], capture_output=True, cwd="/", env=env, check=False)
        if trial.returncode == 0:
            return [*prefix, python], env
    pytest.skip(f"the unprivileged user cannot run {' or '.join(pythons)} here (with {probe!r})")


def pythons() -> list[str]:
    """This interpreter, then the system's, when it is the same version."""
    same = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return [sys.executable, *[p for p in (f"/usr/bin/{same}", f"/usr/local/bin/{same}") if os.path.exists(p)]]


_READER = r"""
import os, subprocess, sys
sys.path.insert(0, sys.argv[1])
from core.evaluation.sandbox.isolation import protect_process
if sys.argv[2] == "protect":
    assert protect_process()
peek = (
    "import os\n"
    "try:\n    print(open(f'/proc/{os.getppid()}/environ', 'rb').read().decode())\n"
    "except OSError as e:\n    print(type(e).__name__)"
)
print(subprocess.run([sys.executable, "-c", peek], capture_output=True, text=True).stdout.strip())
"""


def readable_copy_of_core() -> Path:
    """This checkout's ``core`` package, copied where the unprivileged user can read it: a checkout under a
    private home (CI's clone) is out of its reach, and the check needs only the package's own code."""
    # The temporary folder may be private too (here /tmp is 0700): the first one every user can enter.
    shared = next((d for d in (tempfile.gettempdir(), "/var/tmp", "/dev/shm")
                   if os.path.isdir(d) and os.stat(d).st_mode & 0o001), None)
    if shared is None:
        pytest.skip("no temporary folder that another user can enter")
    folder = Path(tempfile.mkdtemp(prefix="swarm-core-", dir=shared))
    shutil.copytree(ROOT / "core", folder / "core", ignore=shutil.ignore_patterns("__pycache__", "data"))
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_DUMPABLE is Linux's")
@pytest.mark.parametrize("protect", [True, False])
def test_a_same_user_child_cannot_read_a_protected_process_environment(protect: bool) -> None:
    python, env = as_another_user(pythons())
    code = readable_copy_of_core()
    try:
        result = subprocess.run(
            [*python, "-c", _READER, str(code), "protect" if protect else "open"], capture_output=True, text=True,
            timeout=60, cwd="/", env={**env, "SWARM_TEST_SECRET": "sk-do-not-leak"},
        )
    finally:
        shutil.rmtree(code, ignore_errors=True)
    assert result.returncode == 0, result.stderr
    if protect:
        assert result.stdout.strip() == "PermissionError"
    else:  # the control: without it, the same child reads the key
        assert "SWARM_TEST_SECRET=sk-do-not-leak" in result.stdout


def _leaking(info: RequestInfo) -> str:
    """The demo, except that the Developer's code reads its parent's (the app's) environment and puts what it
    read into the error the tests report, which goes back to the model in the next prompts."""
    reply = demo_script(info)
    if info.role != "Developer" or info.call != ev.CallKind.WORK:
        return reply
    data = json.loads(reply)
    data["public"] = (
        "```python\nimport os\ntry:\n    LEAK = open(f'/proc/{os.getppid()}/environ', 'rb').read().decode()\n"
        "except OSError as exc:\n    LEAK = f'blocked: {type(exc).__name__}'\n"
        "raise RuntimeError(LEAK.replace(chr(0), ' '))\n```"
    )
    return json.dumps(data)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_DUMPABLE is Linux's")
def test_unisolated_model_code_cannot_read_the_apps_api_key() -> None:
    # The app itself, as that user: it loads its packages and starts its interpreter again (for the code).
    python, env = as_another_user(pythons(), f"import openai; {RESTART}")
    secret = "sk-never-leaves-0123456789"
    # /tmp may be private to root (it is in some containers); /var/tmp is world-writable by convention.
    home = Path(tempfile.mkdtemp(prefix="swarm-unisolated-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    try:
        home.chmod(0o777)
        (home / "config.toml").write_text("")
        with ScriptedServer(_leaking) as server:
            result = swarm(
                "--headless", "--base-url", server.base_url, "--api-key-env", "SWARM_TEST_KEY", "--execute",
                "--allow-unisolated-code", "--max-rounds", "2", "--config", str(home / "config.toml"),
                DEMO_PROBLEMS["code"],
                env={**env, "SWARM_TEST_KEY": secret, "SWARM_SANDBOX_ISOLATION": "off", "HOME": str(home),
                     "SWARM_TUI_SESSIONS_DIR": str(home)},
                python=python, cwd=home,
            )
            bodies = [json.dumps(r.body) for r in server.requests]
        assert result.returncode in (0, 1), result.stderr[-800:]
        assert any("blocked: PermissionError" in b for b in bodies), result.stderr[-1500:]  # it ran, and was refused
        assert not any(secret in b for b in bodies)
        assert not any(secret in p.read_text(errors="replace") for p in home.rglob("*.json*"))
    finally:
        shutil.rmtree(home, ignore_errors=True)
