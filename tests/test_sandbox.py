"""The code sandbox: every result class, isolation (env, cwd, temp dir, processes), and HumanEval."""

from __future__ import annotations

import asyncio
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from core.evaluation.sandbox import Outcome, SandboxLimits, SandboxResult, arun_code, run_code

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
HUMANEVAL = DATASETS / "humaneval.jsonl"
if not HUMANEVAL.exists():  # the repo may sit elsewhere; the brief's layout is /work/main + /work/shared
    HUMANEVAL = Path("/work/shared/datasets/humaneval.jsonl")

FAST = SandboxLimits(wall_seconds=1.5, cpu_seconds=1, memory_mb=256)

INC = "def inc(x):\n    return x + 1\n"


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
    assert set(env) <= {"PATH", "LANG", "LC_CTYPE"}  # LC_CTYPE: Python's own locale coercion


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
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(child.pid)\n"
    )
    result = run_code(code, "", FAST)
    assert result.passed
    assert _stops_running(int(result.stdout.strip()))


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


async def test_cancelling_an_async_run_kills_it_and_cleans_up(tmp_path: Path) -> None:
    info = tmp_path / "info.json"
    code = (
        "import json, os, time\n"
        f"open({str(info)!r}, 'w').write(json.dumps([os.getpid(), os.getcwd()]))\n"
        "time.sleep(60)\n"
    )
    task = asyncio.create_task(arun_code(code, "", SandboxLimits(wall_seconds=30, cpu_seconds=30)))
    for _ in range(200):
        if info.exists() and info.read_text():
            break
        await asyncio.sleep(0.02)
    pid, cwd = json.loads(info.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _stops_running(pid)
    assert not Path(cwd).parent.exists()


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
