"""The code sandbox: every result class, isolation (env, cwd, temp dir, processes, network, files),
unforgeable verdicts, objects of the code used from the tests, and HumanEval."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from core.datasets.catalog import DATA
from core.evaluation import sandbox
from core.evaluation.sandbox import (
    Outcome,
    SandboxLimits,
    SandboxResult,
    arun_code,
    isolation,
    isolation_status,
    run_code,
)
from tests.support.paths import ROOT

HUMANEVAL = DATA / "humaneval.jsonl"  # the copy shipped in the package

FAST = SandboxLimits(wall_seconds=1.5, cpu_seconds=1, memory_mb=256)

INC = "def inc(x):\n    return x + 1\n"


ISOLATED = isolation_status()[0]
needs_isolation = pytest.mark.skipif(not ISOLATED, reason="bubblewrap isolation is not available here")


def _pids_with(token: str) -> list[int]:
    """Live processes whose command line contains ``token`` (zombies have none)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _all_gone(token: str, timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while _pids_with(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _stops_running(pid: int) -> bool:
    """True once the process is gone or a zombie (SIGKILL delivery is asynchronous, so poll a little)."""
    status = Path(f"/proc/{pid}/status")
    for _ in range(100):
        try:
            if "State:\tZ" in status.read_text():
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.02)
    return False


def test_passing_code_and_tests() -> None:
    result = run_code(INC, ["assert inc(1) == 2", "assert inc(-1) == 0"], FAST)
    assert result.outcome is Outcome.PASSED
    assert result.passed
    assert (result.tests_passed, result.tests_total) == (2, 2)
    assert result.failing_test == ""


def test_failing_assert_in_a_list_names_that_test() -> None:
    tests = ["assert inc(1) == 2", "assert inc(2) == 4", "assert inc(3) == 4"]
    result = run_code(INC, tests, FAST)
    assert result.outcome is Outcome.WRONG_ANSWER
    assert not result.passed
    assert result.failing_test == "assert inc(2) == 4"
    assert result.tests_passed == 1
    assert "AssertionError" in result.traceback
    assert "inc(2) == 4" in result.summary()


def test_failing_assert_in_a_test_block_names_the_whole_statement() -> None:
    tests = (
        "def check(candidate):\n"
        "    assert candidate(1) == 2\n"
        "    assert candidate(\n"
        "        5\n"
        "    ) == 7, 'five'\n"
        "check(inc)\n"
    )
    result = run_code(INC, tests, FAST)
    assert result.outcome is Outcome.WRONG_ANSWER
    assert result.failing_test == "assert candidate(\n    5\n) == 7, 'five'"
    assert "AssertionError: five" in result.traceback
    # Only candidate/test frames in the traceback, never the runner's.
    assert "runner.py" not in result.traceback


def test_assert_in_the_solution_itself_is_a_wrong_answer() -> None:
    result = run_code("x = 3\nassert x == 4\n", "", FAST)
    assert result.outcome is Outcome.WRONG_ANSWER
    assert result.failing_test == "assert x == 4"


def test_infinite_loop_is_time_limit_exceeded() -> None:
    result = run_code("while True:\n    pass\n", "", FAST)
    assert result.outcome is Outcome.TIME_LIMIT_EXCEEDED
    assert not result.passed


def test_sleeping_test_is_stopped_by_the_wall_clock_and_named() -> None:
    tests = ["assert inc(1) == 2", "import time\ntime.sleep(60)"]
    result = run_code(INC, tests, FAST)
    assert result.outcome is Outcome.TIME_LIMIT_EXCEEDED
    assert result.failing_test == "import time\ntime.sleep(60)"
    assert result.tests_passed == 1


def test_candidate_cannot_swallow_the_time_limit() -> None:
    code = "while True:\n    try:\n        while True:\n            pass\n    except Exception:\n        pass\n"
    result = run_code(code, "", FAST)
    assert result.outcome is Outcome.TIME_LIMIT_EXCEEDED


def test_huge_allocation_is_memory_limit_exceeded() -> None:
    result = run_code("x = bytearray(10**10)\n", "", FAST)
    assert result.outcome is Outcome.MEMORY_LIMIT_EXCEEDED


def test_growing_list_is_memory_limit_exceeded() -> None:
    code = "grow = []\nwhile True:\n    grow.append([0] * 100_000)\n"
    result = run_code(code, "", SandboxLimits(wall_seconds=5, cpu_seconds=5, memory_mb=128))
    assert result.outcome is Outcome.MEMORY_LIMIT_EXCEEDED


def test_syntax_error_in_code() -> None:
    result = run_code("def f(:\n    return 1\n", ["assert f() == 1"], FAST)
    assert result.outcome is Outcome.SYNTAX_ERROR
    assert "SyntaxError" in result.traceback
    assert result.failing_test == ""


def test_syntax_error_in_a_test_names_it() -> None:
    result = run_code(INC, ["assert inc(1) == 2", "assert inc(1) =="], FAST)
    assert result.outcome is Outcome.SYNTAX_ERROR
    assert result.failing_test == "assert inc(1) =="


def test_exception_is_runtime_error_with_traceback() -> None:
    code = "def div(a, b):\n    return a / b\n"
    result = run_code(code, ["assert div(4, 2) == 2", "assert div(1, 0) == 0"], FAST)
    assert result.outcome is Outcome.RUNTIME_ERROR
    assert result.failing_test == "assert div(1, 0) == 0"
    assert "ZeroDivisionError" in result.traceback
    assert "return a / b" in result.traceback  # the candidate's own line is shown


def test_sys_exit_with_error_code_is_runtime_error() -> None:
    result = run_code("import sys\nsys.exit(3)\n", "", FAST)
    assert result.outcome is Outcome.RUNTIME_ERROR


def test_installed_packages_and_exit_work_like_a_normal_python() -> None:
    code = "import numpy as np\ndef total(n):\n    return int(np.arange(n).sum())\n"
    assert run_code(code, ["assert total(4) == 6"], FAST).passed
    assert run_code("print('done')\nexit(0)\n", ["assert True"], FAST).passed
    # The app's own packages are not on the candidate's path.
    assert run_code("import core.runtime.config\n", "", FAST).outcome is Outcome.RUNTIME_ERROR


def test_secret_environment_variables_never_reach_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-secret-4242")
    monkeypatch.setenv("SWARM_TEST_TOKEN", "token-fake-secret-4242")
    code = "import json, os\nprint(json.dumps(dict(os.environ)))\n"
    result = run_code(code, "", FAST)
    assert result.passed
    env = json.loads(result.stdout)
    assert "fake-secret-4242" not in result.stdout
    assert set(env) <= {"PATH", "LANG", "HOME", "LC_CTYPE"}  # LC_CTYPE: Python's own locale coercion
    assert env["HOME"].endswith("/work")  # the run's own folder


def test_prints_cannot_spoof_the_verdict() -> None:
    fake = json.dumps({"result": {"outcome": "PASSED", "tests_passed": 1, "tests_total": 1}})
    code = f"import sys\nprint({fake!r})\nprint({fake!r}, file=sys.stderr)\nraise ValueError('real failure')\n"
    result = run_code(code, ["assert True"], FAST)
    assert result.outcome is Outcome.RUNTIME_ERROR
    assert "real failure" in result.traceback


def test_exiting_early_cannot_skip_the_tests() -> None:
    result = run_code("import os\nos._exit(0)\n", ["assert False"], FAST)
    assert result.outcome is Outcome.RUNTIME_ERROR
    assert not result.passed


def test_fresh_working_dir_is_removed_afterwards() -> None:
    code = "import os\nprint(os.getcwd())\nprint(os.listdir('.'))\nopen('junk.txt', 'w').write('x')\n"
    result = run_code(code, "", FAST)
    assert result.passed
    cwd, listing = result.stdout.splitlines()[:2]
    assert listing == "[]"
    assert not Path(cwd).exists()
    assert not Path(cwd).parent.exists()


def test_output_is_capped() -> None:
    limits = SandboxLimits(wall_seconds=5, cpu_seconds=5, output_chars=1000)
    result = run_code("for _ in range(10_000):\n    print('x' * 100)\n", "", limits)
    assert result.passed
    assert len(result.stdout) < 1100
    assert result.stdout.endswith("[output truncated]")


def test_background_children_are_killed() -> None:
    token = f"sandbox-child-{uuid.uuid4().hex}"
    code = (
        "import subprocess, sys\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {token!r}])\n"
        "print(child.pid)\n"
    )
    result = run_code(code, "", FAST)
    assert result.passed
    assert _all_gone(token)


def test_result_round_trips_through_a_dict() -> None:
    result = run_code(INC, ["assert inc(1) == 3"], FAST)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["outcome"] == "WRONG_ANSWER"
    assert SandboxResult.from_dict(data) == result


async def test_async_runs_concurrently_and_classify() -> None:
    results = await asyncio.gather(
        arun_code(INC, ["assert inc(1) == 2"], FAST),
        arun_code(INC, ["assert inc(1) == 5"], FAST),
        arun_code("while True:\n    pass\n", "", FAST),
    )
    assert [r.outcome for r in results] == [
        Outcome.PASSED,
        Outcome.WRONG_ANSWER,
        Outcome.TIME_LIMIT_EXCEEDED,
    ]


async def test_cancelling_an_async_run_kills_it_and_cleans_up() -> None:
    # The code can only write in its own folder: a marker there tells the test which run is which.
    marker = f"started-{uuid.uuid4().hex}"
    code = f"open({marker!r}, 'w').write('x')\nimport time\ntime.sleep(60)\n"
    task = asyncio.create_task(arun_code(code, "", SandboxLimits(wall_seconds=30, cpu_seconds=30)))
    root = None
    for _ in range(250):
        found = list(Path(tempfile.gettempdir()).glob(f"swarm-sandbox-*/work/{marker}"))
        if found:
            root = found[0].parent.parent
            break
        await asyncio.sleep(0.02)
    assert root is not None
    pids = _pids_with(root.name)  # the run's processes carry its folder's name on their command lines
    assert pids
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert all(_stops_running(pid) for pid in pids)
    assert not root.exists()


def _humaneval_rows() -> list[dict[str, str]]:
    with HUMANEVAL.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _score(rows: list[dict[str, str]], body: str | None) -> dict[str, SandboxResult]:
    def one(row: dict[str, str]) -> tuple[str, SandboxResult]:
        completion = row["canonical_solution"] if body is None else body
        program = row["prompt"] + completion + "\n" + row["test"] + f"\ncheck({row['entry_point']})\n"
        return row["task_id"], run_code(program)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, rows))


def test_every_canonical_humaneval_solution_passes() -> None:
    rows = _humaneval_rows()
    assert len(rows) == 164
    results = _score(rows, None)
    failures = {task: r.summary() for task, r in results.items() if not r.passed}
    assert failures == {}


def test_a_wrong_humaneval_solution_fails_every_problem() -> None:
    rows = _humaneval_rows()
    results = _score(rows, "    return None\n")
    passing = [task for task, r in results.items() if r.passed]
    assert passing == []
    outcomes = {r.outcome for r in results.values()}
    assert outcomes <= {Outcome.WRONG_ANSWER, Outcome.RUNTIME_ERROR}
    # A failed assert names the line from check().
    first = results["HumanEval/0"]
    assert first.outcome is Outcome.WRONG_ANSWER
    assert first.failing_test.startswith("assert candidate(")


def test_the_sandbox_never_runs_in_this_process() -> None:
    result = run_code("import os\nprint(os.getpid())\n", "", FAST)
    assert int(result.stdout) != os.getpid()


# --- hostile code: the jail ------------------------------------------------------------------------

SECRET = "sk-test-SECRET123"

_APP = """
import json, sys
from core.evaluation.sandbox import SandboxLimits, run_code
result = run_code(sys.argv[1], ["assert True"], SandboxLimits(wall_seconds=5, cpu_seconds=5))
print(json.dumps(result.to_dict()))
"""


@needs_isolation
def test_code_cannot_read_the_apps_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # /proc/<pid>/environ shows the environment a process started with, so the "app" here is a process
    # started with the key, running the sandbox like the real app would.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code = (
        "import os\n"
        "seen = []\n"
        "for pid in [p for p in os.listdir('/proc') if p.isdigit()] + [str(os.getppid())]:\n"
        "    for name in ('environ', 'cmdline'):\n"
        "        try:\n"
        "            seen.append(open(f'/proc/{pid}/{name}', 'rb').read().decode('latin-1'))\n"
        "        except OSError:\n"
        "            pass\n"
        "print(seen)\n"
        "raise RuntimeError(open('/proc/%d/environ' % os.getppid()).read())\n"
    )
    root = ROOT
    env = {**os.environ, "PYTHONPATH": str(root)}
    app = subprocess.run([sys.executable, "-c", _APP, code], env=env, capture_output=True, text=True, timeout=60)
    assert app.returncode == 0, app.stderr
    data = json.loads(app.stdout)
    assert data["outcome"] == "RUNTIME_ERROR"  # it ran, and found nothing worth raising
    assert SECRET not in app.stdout
    # In this process too (the key is in os.environ now, as for a child of the app).
    result = run_code(code, ["assert True"], FAST)
    assert SECRET not in json.dumps(result.to_dict())


@needs_isolation
def test_code_cannot_write_outside_its_folder(tmp_path: Path) -> None:
    targets = [tmp_path / "escaped.txt", Path(tempfile.gettempdir()) / f"escaped-{uuid.uuid4().hex}"]
    code = (
        "import os\n"
        f"for path in {[str(t) for t in targets]!r}:\n"
        "    try:\n"
        "        with open(path, 'w') as fh:\n"
        "            fh.write('escaped')\n"
        "    except OSError as exc:\n"
        "        print(exc)\n"
        "for path in ('/usr/escaped', '/escaped', '/etc/escaped'):\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        print('WROTE', path)\n"
        "    except OSError:\n"
        "        pass\n"
        "open('inside.txt', 'w').write('fine')\n"  # its own folder stays writable
    )
    try:
        result = run_code(code, "", FAST)
        assert result.passed, result.summary()
        assert "WROTE" not in result.stdout
        assert not any(t.exists() for t in targets)
    finally:
        for t in targets:
            t.unlink(missing_ok=True)


@needs_isolation
def test_kernel_settings_and_new_namespaces_are_out_of_reach() -> None:
    # Sysctl files check the uid, not capabilities: as root, uid 0 in the sandbox is the host's. Only opened,
    # never written.
    code = (
        "import ctypes, os\n"
        "for path in ('/proc/sys/kernel/core_pattern', '/proc/sys/vm/drop_caches', '/proc/sysrq-trigger'):\n"
        "    try:\n"
        "        os.close(os.open(path, os.O_WRONLY))\n"
        "        print('WRITABLE', path)\n"
        "    except OSError:\n"
        "        pass\n"
        "if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0:  # CLONE_NEWUSER\n"
        "    print('NEW USER NAMESPACE')\n"
    )
    result = run_code(code, "", FAST)
    assert result.passed, result.summary()
    assert result.stdout == ""


@needs_isolation
def test_code_cannot_reach_the_network() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.3)
        port = listener.getsockname()[1]
        code = (
            "import socket\n"
            "for host in ('127.0.0.1', 'localhost'):\n"
            "    try:\n"
            f"        socket.create_connection((host, {port}), timeout=0.5).sendall(b'hello')\n"
            "        print('CONNECTED')\n"
            "    except OSError as exc:\n"
            "        print(type(exc).__name__)\n"
        )
        result = run_code(code, "", FAST)
        assert result.passed, result.summary()
        assert "CONNECTED" not in result.stdout
        with pytest.raises(TimeoutError):
            listener.accept()


@needs_isolation
def test_code_cannot_signal_the_app() -> None:
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        code = (
            "import os, signal\n"
            f"for pid in (os.getppid(), {os.getpid()}, {victim.pid}):\n"
            "    for sig in (signal.SIGKILL, signal.SIGTERM):\n"
            "        try:\n"
            "            os.kill(pid, sig)\n"
            "        except OSError as exc:\n"
            "            print(pid, exc)\n"
            "try:\n"
            f"    os.killpg({os.getpgid(0)}, signal.SIGKILL)\n"
            "except OSError as exc:\n"
            "    print(exc)\n"
        )
        result = run_code(code, ["assert True"], FAST)
        assert result.passed, result.summary()  # it ran to the end: nothing it sent reached anyone
        time.sleep(0.1)
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


@needs_isolation
def test_a_detached_grandchild_does_not_outlive_the_run(tmp_path: Path) -> None:
    token = f"sandbox-grandchild-{uuid.uuid4().hex}"
    marker = tmp_path / "grandchild-was-here"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.2)
        port = listener.getsockname()[1]
        # Sleeps past the run, then keeps trying to leave traces for 3 s.
        script = (
            "import socket, time\n"
            "time.sleep(0.3)\n"
            "for _ in range(60):\n"
            "    try:\n"
            f"        open({str(marker)!r}, 'w').write('x')\n"
            "    except OSError:\n"
            "        pass\n"
            "    try:\n"
            f"        socket.create_connection(('127.0.0.1', {port}), timeout=0.05).close()\n"
            "    except OSError:\n"
            "        pass\n"
            "    time.sleep(0.05)\n"
        )
        code = (
            "import os, subprocess, sys\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            f"    subprocess.Popen([sys.executable, '-c', {script!r}, {token!r}], start_new_session=True)\n"
            "    os._exit(0)\n"
            "os.wait()\n"
        )
        result = run_code(code, ["assert True"], FAST)
        assert result.passed, result.summary()
        assert _all_gone(token)
        time.sleep(0.5)
        assert not marker.exists()
        with pytest.raises(TimeoutError):
            listener.accept()


# --- hostile code: the verdict ----------------------------------------------------------------------

_FAKE = repr({"result": {"outcome": "PASSED", "tests_passed": 2, "tests_total": 2, "traceback": ""}})
_F = "def f(x=0):\n    return None\n"
# No honest f() passes these (nor any technique's own tests below).
_CONTRADICTION = ["assert f() == 1", "assert f() == 2"]
FORGERIES = {
    "verdict fd from argv": (
        f"{_F}import os, sys\n"
        "for arg in sys.argv[1:]:\n"
        "    try:\n"
        f"        os.write(int(arg), ({_FAKE!r} + '\\n').encode())\n"
        "    except (OSError, ValueError):\n"
        "        pass\n"
        "os._exit(0)\n"
    ),
    "every fd": (
        f"{_F}import os\n"
        "for fd in range(1024):\n"
        "    for line in (" + repr(_FAKE) + ", '[\"ready\",[\"D\"]]', '[\"ok\",1,[]]'):\n"
        "        try:\n"
        "            os.write(fd, (line + '\\n').encode())\n"
        "        except OSError:\n"
        "            pass\n"
        "os._exit(0)\n"
    ),
    "printed records": (
        f"{_F}import os, sys\nprint({_FAKE!r})\nprint({_FAKE!r}, file=sys.stderr)\nsys.stdout.flush()\nos._exit(0)\n"
    ),
    "exit in the code": f"{_F}raise SystemExit(0)\n",
    "os._exit in the call": "import os\ndef f():\n    os._exit(0)\n",
    "SystemExit in the call": "def f():\n    raise SystemExit(0)\n",
    "sys.exit in the call": "import sys\ndef f():\n    sys.exit()\n",
    "KeyboardInterrupt in the call": "def f():\n    raise KeyboardInterrupt\n",
    "StopIteration in the call": (
        "def f(x=0):\n    raise StopIteration\n",
        ["assert all(map(lambda x: f(x) == x + 1, (1, 2)))", "assert all(map(lambda x: f(x) == x, (1, 2)))"],
    ),
    "patched exec": f"{_F}import builtins\nbuiltins.exec = lambda *args, **kwargs: None\n",
    "patched AssertionError": f"{_F}import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {{}})\n",
    "cleared test list": (
        f"{_F}import gc\n"
        "for obj in gc.get_objects():\n"
        "    if type(obj) is list and obj and all(type(x).__name__ == 'code' for x in obj):\n"
        "        obj.clear()\n"
    ),
    "rigged __eq__": (
        "class Anything:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = object.__hash__\n"
        "def f():\n"
        "    return Anything()\n"
    ),
    "rigged int subclass": (
        "class Anything(int):\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = int.__hash__\n"
        "def f():\n"
        "    return Anything(7)\n"
    ),
    "rigged __contains__": (
        "class Everything:\n"
        "    def __contains__(self, item):\n"
        "        return True\n"
        "    def __len__(self):\n"
        "        return 1\n"
        "def f():\n"
        "    return Everything()\n",
        ["assert len(f()) == 1", "assert 1 in f() and 2 in f()"],
    ),
    "shadowed built-in": (
        "def f(x=0):\n    return 0\ndef abs(x):\n    return 0\n",
        ["assert abs(f() - 3) < 1e-9", "assert abs(f() - 4) < 1e-9"],
    ),
}


@pytest.mark.parametrize("technique", list(FORGERIES))
def test_the_code_cannot_forge_a_pass(technique: str) -> None:
    forgery = FORGERIES[technique]
    code, tests = forgery if isinstance(forgery, tuple) else (forgery, _CONTRADICTION)
    result = run_code(code, tests, FAST)
    assert result.outcome is not Outcome.PASSED, result
    assert not result.passed
    assert result.tests_passed < len(tests)


def test_hidden_tests_are_not_visible_to_the_code() -> None:
    code = (
        "import gc, sys\n"
        "found = [o for o in gc.get_objects() if isinstance(o, str) and 'SECRET_EXPECTED' in o]\n"
        "found += [a for a in sys.argv if 'SECRET_EXPECTED' in a]\n"
        "def f():\n"
        "    return len(found)\n"
    )
    # The needle is built at run time, so only the test source itself contains it.
    result = run_code(code, ["needle = 'SECRET_' + 'EXPECTED'\nassert f() == 0"], FAST)
    assert result.passed, result.summary()


# --- the tests use the code's objects through proxies ------------------------------------------------

OBJECTS = """
from collections import namedtuple
from dataclasses import dataclass
from fractions import Fraction

Point = namedtuple("Point", "x y")

@dataclass
class Token:
    kind: str
    value: int

class Empty(ValueError):
    pass

class Stack:
    def __init__(self):
        self.items = []
    def push(self, item):
        self.items.append(item)
        return self
    def pop(self):
        if not self.items:
            raise Empty("pop from an empty stack")
        return self.items.pop()
    def __len__(self):
        return len(self.items)
    def __iter__(self):
        return iter(self.items)
    def __getitem__(self, i):
        return self.items[i]

def sort_in_place(xs):
    xs.sort()

def apply(fn, x):
    return fn(x)

def count(n):
    yield from range(n)

def parse(text):
    if not text:
        raise KeyError(text)
    return {"words": text.split(), "n": len(text), "t": (1, 2.5, None), "s": {1, 2}, "b": text.encode()}

def big():
    return 3 ** 200, -(2 ** 70), float("inf"), Fraction(1, 3), Point(1, 2), complex(1, -2)

def lex(text):
    return [Token("num", int(part)) for part in text.split()]

LIMIT = 10
"""

OBJECT_TESTS = [
    "s = Stack()\nassert len(s) == 0 and not s.items\ns.push(1).push(2)\nassert len(s) == 2 and s[0] == 1",
    "s = Stack().push(3).push(4)\nassert list(s) == [3, 4] and 4 in s and 5 not in s\nassert s.pop() == 4",
    "s = Stack()\ntry:\n    s.pop()\n    raise AssertionError('no error')\n"
    "except Empty as exc:\n    assert str(exc) == 'pop from an empty stack'",
    "try:\n    Stack().pop()\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('no error')",
    "assert isinstance(Stack(), Stack) and not isinstance(3, Stack)",
    "xs = [3, 1, 2]\nsort_in_place(xs)\nassert xs == [1, 2, 3]",
    "assert apply(lambda x: x * 2, 21) == 42\nassert apply(str.upper, 'a') == 'A'",
    "assert list(count(3)) == [0, 1, 2] and sum(count(4)) == 6",
    "r = parse('a bc')\nassert r == {'words': ['a', 'bc'], 'n': 4, 't': (1, 2.5, None), 's': {1, 2}, 'b': b'a bc'}",
    "try:\n    parse('')\nexcept KeyError as exc:\n    assert exc.args == ('',)",
    "from fractions import Fraction\n"
    "assert big() == (3 ** 200, -(2 ** 70), float('inf'), Fraction(1, 3), (1, 2), 1 - 2j)",
    "assert LIMIT == 10 and abs(-LIMIT) == 10",
    "assert lex('1 2') == [Token('num', 1), Token('num', 2)] and lex('3') != [Token('num', 4)]",
    "assert lex('5')[0].value == 5 and list(range(10**5)) == list(range(10**5))",
]


def test_objects_of_the_code_work_in_the_tests() -> None:
    result = run_code(OBJECTS, OBJECT_TESTS, FAST)
    assert result.passed, result.summary() + "\n" + result.traceback


def test_numpy_results_arrive_as_arrays() -> None:
    code = "import numpy as np\ndef grid(n):\n    return np.arange(n * n).reshape(n, n), np.float64(0.5)\n"
    tests = ["import numpy as np\ng, half = grid(2)\nassert (g == np.array([[0, 1], [2, 3]])).all() and half == 0.5"]
    result = run_code(code, tests, SandboxLimits(wall_seconds=10, cpu_seconds=10, memory_mb=512))
    assert result.passed, result.summary()


def test_a_failing_call_shows_the_codes_frames_and_names_the_test() -> None:
    result = run_code(OBJECTS, ["assert len(Stack()) == 0", "Stack().pop()"], FAST)
    assert result.outcome is Outcome.RUNTIME_ERROR
    assert result.failing_test == "Stack().pop()"
    assert 'raise Empty("pop from an empty stack")' in result.traceback
    assert result.summary().endswith("pop from an empty stack")


def test_humaneval_scoring_runs_the_hidden_tests_in_the_judge() -> None:
    rows = _humaneval_rows()

    def one(row: dict[str, str], body: str | None) -> tuple[str, SandboxResult]:
        code = row["prompt"] + (row["canonical_solution"] if body is None else body)
        return row["task_id"], run_code(code, row["test"] + f"\ncheck({row['entry_point']})\n")

    with ThreadPoolExecutor(max_workers=2) as pool:
        right = dict(pool.map(lambda row: one(row, None), rows))
        wrong = dict(pool.map(lambda row: one(row, "    return None\n"), rows[:20]))
    assert {task: r.summary() for task, r in right.items() if not r.passed} == {}
    assert [task for task, r in wrong.items() if r.passed] == []
    assert wrong["HumanEval/0"].failing_test.startswith("assert candidate(")


# --- without bubblewrap -----------------------------------------------------------------------------


@pytest.fixture
def no_isolation(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(sandbox.ISOLATION_ENV, "off")
    isolation.probe_isolation.cache_clear()
    monkeypatch.setattr(isolation, "_ALLOWED_PROCESS", True)  # as --allow-unisolated-code does: refused otherwise
    yield
    monkeypatch.undo()
    isolation.probe_isolation.cache_clear()


def test_without_isolation_runs_still_classify(no_isolation: None) -> None:
    isolated, message = isolation_status()
    assert not isolated
    assert message.startswith("code runs without isolation")
    assert run_code(INC, ["assert inc(1) == 2"], FAST).outcome is Outcome.PASSED
    wrong = run_code(INC, ["assert inc(1) == 2", "assert inc(2) == 4"], FAST)
    assert (wrong.outcome, wrong.failing_test) == (Outcome.WRONG_ANSWER, "assert inc(2) == 4")
    assert run_code("def f(:\n", ["assert f()"], FAST).outcome is Outcome.SYNTAX_ERROR
    assert run_code("x = 1 / 0\n", "", FAST).outcome is Outcome.RUNTIME_ERROR
    assert run_code("x = bytearray(10**10)\n", "", FAST).outcome is Outcome.MEMORY_LIMIT_EXCEEDED
    assert run_code(INC, ["import time\ntime.sleep(60)"], FAST).outcome is Outcome.TIME_LIMIT_EXCEEDED
    assert run_code(FORGERIES["rigged __eq__"], _CONTRADICTION, FAST).outcome is Outcome.WRONG_ANSWER
    env = json.loads(run_code("import json, os\nprint(json.dumps(dict(os.environ)))\n", "", FAST).stdout)
    assert set(env) <= {"PATH", "LANG", "HOME", "LC_CTYPE"}


def test_a_missing_bwrap_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation.shutil, "which", lambda name: None)
    monkeypatch.delenv(sandbox.ISOLATION_ENV, raising=False)
    isolation.probe_isolation.cache_clear()
    try:
        isolated, message = isolation_status()
        assert not isolated
        assert "bubblewrap (bwrap) not found; install it with apt-get install bubblewrap" in message
    finally:
        monkeypatch.undo()
        isolation.probe_isolation.cache_clear()


def test_an_interpreter_living_under_tmp_stays_visible_inside_the_private_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkout (and its venv) under /tmp, as CI's clone may be: the sandbox's own /tmp must not hide it.
    venv = tmp_path / "venv" / "lib"
    venv.mkdir(parents=True)
    monkeypatch.setattr(isolation, "python_paths", lambda: ["/usr", str(venv)])
    args = isolation.rebind_under_tmp()
    real = os.path.realpath(venv)
    assert real.startswith("/tmp/") and args == ["--ro-bind", real, real]
