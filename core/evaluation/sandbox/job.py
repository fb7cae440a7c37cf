"""One sandbox run: the two processes, their payload, the wait, the records read back, the verdict."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import marshal
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

# --- one run -----------------------------------------------------------------------------------------
from core.evaluation.sandbox.child import BOOTSTRAP, RUNNER_NAME, runner_code
from core.evaluation.sandbox.isolation import (
    SANDBOX_PATH,
    IsolationRefused,
    bwrap_argv,
    probe_isolation,
    python_binary,
    site_packages,
    unisolated_refusal,
)
from core.evaluation.sandbox.limits import (
    FILE_BYTES,
    GRACE_S,
    MESSAGE_BYTES,
    OUTPUT_MARK,
    TRACEBACK_CHARS,
    Outcome,
    SandboxLimits,
    SandboxResult,
)


def _payload_file(root: Path, payload: dict[str, Any]) -> tuple[IO[bytes], int]:
    data = marshal.dumps(payload)
    fh = tempfile.TemporaryFile(dir=root)  # noqa: SIM115 - closed by _Job.started()/close()
    fh.write(data)
    fh.flush()
    return fh, len(data)



def _common_payload(code: str, limits: SandboxLimits) -> dict[str, Any]:
    """What both processes' payloads carry: the code, the runner and the limits in the runner's units."""
    return {
        "code": code,
        "traceback_chars": TRACEBACK_CHARS,
        "max_message": MESSAGE_BYTES,
        "site_packages": site_packages(),
        "runner": runner_code(),
        "runner_name": RUNNER_NAME,
        "limits": {
            "wall_seconds": float(limits.wall_seconds),
            "cpu_seconds": max(1, math.ceil(limits.cpu_seconds)),
            "memory_bytes": int(limits.memory_mb) * 2**20,
            "file_bytes": FILE_BYTES,
            "output_chars": int(limits.output_chars),
        },
    }


def _discard(opened: list[Any], root: Path) -> None:
    """A job that could not be set up: its descriptors and files closed, its folder removed."""
    for item in opened:
        if isinstance(item, int):
            os.close(item)
        else:
            item.close()
    shutil.rmtree(root, ignore_errors=True)

@dataclass
class _Job:
    """Everything one run needs; removed by ``close``."""

    root: Path
    cwd: Path
    env: dict[str, str]
    code_argv: list[str]  # the candidate: runs the code, then serves its objects
    code_fds: tuple[int, ...]
    judge_argv: list[str]  # runs the tests, writes the verdict
    judge_fds: tuple[int, ...]
    done: int  # readable once the judge has written its verdict (a byte, or end of file if it died)
    result: IO[bytes]
    stdout: IO[bytes]
    stderr: IO[bytes]
    transient: list[Any]  # payload files and the parent's pipe ends: closed once both processes started
    tests: str | list[str]
    limits: SandboxLimits
    isolated: bool
    records: list[dict[str, Any]] | None = None

    @classmethod
    def create(cls, code: str, tests: str | Sequence[str], limits: SandboxLimits) -> _Job:
        isolation = probe_isolation()
        refused = unisolated_refusal()
        if refused:  # no jail, and nobody accepted running model code without one
            raise IsolationRefused(refused)
        root = Path(tempfile.mkdtemp(prefix="swarm-sandbox-"))
        opened: list[Any] = []
        try:
            cwd = root / "work"
            cwd.mkdir()
            test_value: str | list[str] = tests if isinstance(tests, str) else [str(t) for t in tests]
            # Unlinked files: nothing in a sandbox can reach them by path, and the code gets none of the judge's.
            result = tempfile.TemporaryFile(dir=root)  # noqa: SIM115 - closed by close()
            opened.append(result)
            stdout = tempfile.TemporaryFile(dir=root)  # noqa: SIM115
            opened.append(stdout)
            stderr = tempfile.TemporaryFile(dir=root)  # noqa: SIM115
            opened.append(stderr)
            to_code, to_judge, done = os.pipe(), os.pipe(), os.pipe()
            pipe_ends = [*to_code, *to_judge, done[1]]
            opened.extend([*pipe_ends, done[0]])
            common = _common_payload(code, limits)
            code_channel = (to_code[0], to_judge[1])
            judge_channel = (to_judge[0], to_code[1])
            code_file, code_size = _payload_file(root, {**common, "role": "code", "channel": code_channel})
            opened.append(code_file)
            judge_payload = {
                **common,
                "role": "judge",
                "tests": test_value,
                "channel": judge_channel,
                "result_fd": result.fileno(),
                "done_fd": done[1],
            }
            judge_file, judge_size = _payload_file(root, judge_payload)
            opened.append(judge_file)
        except BaseException:
            _discard(opened, root)
            raise
        if isolation.bwrap is not None:
            prefix, python = bwrap_argv(isolation, str(cwd)), python_binary()
            env = {"PATH": SANDBOX_PATH}  # bwrap's own environment shows in the sandbox's /proc/1/environ
        else:
            prefix, python = [], sys.executable
            env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": os.environ.get("LANG", "C.UTF-8")}
            env["HOME"] = str(cwd)

        def argv(payload: IO[bytes], size: int, role: str) -> list[str]:
            # The root's name is only there for ps/top (and tests) to tell runs apart.
            head = [*prefix, python, "-I", "-S", "-B", "-c", BOOTSTRAP]
            return [*head, str(payload.fileno()), str(size), role, root.name]

        return cls(
            root=root,
            cwd=cwd,
            env=env,
            code_argv=argv(code_file, code_size, "code"),
            code_fds=(*code_channel, code_file.fileno()),
            judge_argv=argv(judge_file, judge_size, "judge"),
            judge_fds=(*judge_channel, done[1], result.fileno(), judge_file.fileno()),
            done=done[0],
            result=result,
            stdout=stdout,
            stderr=stderr,
            transient=[*pipe_ends, code_file, judge_file],
            tests=test_value,
            limits=limits,
            isolated=isolation.bwrap is not None,
        )

    def popen_kwargs(self, role: str) -> dict[str, Any]:
        return {
            "stdin": subprocess.DEVNULL,  # never the app's stdin (the MCP server speaks over it)
            "stdout": self.stdout,  # shared by both processes, so their output interleaves in order
            "stderr": self.stderr,
            "cwd": self.cwd,
            "env": self.env,
            "pass_fds": self.judge_fds if role == "judge" else self.code_fds,
            "start_new_session": True,  # own process group, so a kill reaches its children too
        }

    def started(self) -> None:
        """Drop the parent's copies of what the children inherited: the judge must see the code's end of
        the channel close when the code's process dies."""
        for item in self.transient:
            if isinstance(item, int):
                with contextlib.suppress(OSError):
                    os.close(item)
            else:
                item.close()
        self.transient = []

    def close(self) -> None:
        self.started()
        with contextlib.suppress(OSError):
            os.close(self.done)
        for fh in (self.result, self.stdout, self.stderr):
            fh.close()
        _remove_tree(self.root)

    def verdict(self) -> dict[str, Any] | None:
        if self.records is None:
            self.records = _read_records(self.result)
        return next((r["result"] for r in reversed(self.records) if isinstance(r.get("result"), dict)), None)

    def lost_code(self) -> bool:
        """Whether the verdict blames the code's process ending (then its exit status tells how)."""
        verdict = self.verdict()
        return bool(verdict and verdict.get("lost"))

    def finish(self, judge_rc: int | None, code_rc: int | None, killed: bool, duration: float) -> SandboxResult:
        verdict = self.verdict()
        records = self.records or []
        stdout = _read_capped(self.stdout, self.limits.output_chars)
        stderr = _read_capped(self.stderr, self.limits.output_chars)
        total = len(self.tests) if isinstance(self.tests, list) else (1 if self.tests.strip() else 0)
        if verdict is not None:
            outcome = _outcome(verdict.get("outcome"))
            traceback = str(verdict.get("traceback", ""))
            if verdict.get("lost") and outcome is not Outcome.PASSED:
                # The code's process died (or closed its channel) under a test: its exit status says how.
                if code_rc is None:
                    outcome, why = Outcome.RUNTIME_ERROR, "the code under test closed its channel to the tests"
                else:
                    outcome, why = _classify_death(code_rc, False, duration, self.limits, self.isolated)
                    why = f"the code's process: {why}"
                traceback = f"{traceback.rstrip()}\n{why}".lstrip()
            return SandboxResult(
                outcome=outcome,
                passed=outcome is Outcome.PASSED,
                failing_test=str(verdict.get("failing_test", "")),
                traceback=_trim(traceback),
                stdout=stdout,
                stderr=stderr,
                duration_s=duration,
                tests_passed=int(verdict.get("tests_passed", 0)),
                tests_total=int(verdict.get("tests_total", total)),
            )
        # No verdict: the judge was killed or died. Its last phase marker says where it was.
        phase: dict[str, Any] = next((r for r in reversed(records) if "phase" in r), {})
        failing, passed_units = "", 0
        if phase.get("phase") == "test":
            passed_units = int(phase.get("index", 0))
            if isinstance(self.tests, list) and passed_units < len(self.tests):
                failing = self.tests[passed_units].strip()
        outcome, why = _classify_death(judge_rc, killed, duration, self.limits, self.isolated)
        return SandboxResult(
            outcome=outcome,
            passed=False,
            failing_test=failing,
            traceback=why,
            stdout=stdout,
            stderr=stderr,
            duration_s=duration,
            tests_passed=passed_units,
            tests_total=total,
        )


def _outcome(value: object) -> Outcome:
    try:
        return Outcome(str(value))
    except ValueError:
        return Outcome.RUNTIME_ERROR


def _classify_death(
    returncode: int | None, killed: bool, duration: float, limits: SandboxLimits, isolated: bool = False
) -> tuple[Outcome, str]:
    if killed:
        return Outcome.TIME_LIMIT_EXCEEDED, f"killed after the {limits.wall_seconds:g}s wall-clock limit"
    signum = 0
    if returncode is not None and returncode < 0:
        signum = -returncode
    elif isolated and returncode is not None and returncode > 128:
        signum = returncode - 128  # bubblewrap exits with 128 + the signal that killed its child
    if signum == signal.SIGXCPU:
        return Outcome.TIME_LIMIT_EXCEEDED, f"killed after the {limits.cpu_seconds:g}s CPU limit"
    if signum == signal.SIGKILL:
        # Not our kill: the CPU hard limit (only reachable after at least cpu_seconds) or the OOM killer.
        if duration >= limits.cpu_seconds:
            return Outcome.TIME_LIMIT_EXCEEDED, f"killed after the {limits.cpu_seconds:g}s CPU limit"
        why = f"killed, most likely out of memory ({limits.memory_mb} MB limit)"
        return Outcome.MEMORY_LIMIT_EXCEEDED, why
    if signum:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return Outcome.RUNTIME_ERROR, f"the process crashed ({name})"
    return Outcome.RUNTIME_ERROR, f"the process exited (code {returncode}) before the tests finished"


def _read_records(fh: IO[bytes]) -> list[dict[str, Any]]:
    fh.seek(0)
    records: list[dict[str, Any]] = []
    for line in fh.read(4 * 2**20).decode("utf-8", "replace").splitlines():
        try:
            record = ast.literal_eval(line)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def _read_capped(fh: IO[bytes], chars: int) -> str:
    fh.seek(0)
    text = fh.read(chars * 4 + 8).decode("utf-8", "replace")
    if len(text) > chars:
        return text[:chars] + OUTPUT_MARK
    return text


def _trim(text: str) -> str:
    return text if len(text) <= TRACEBACK_CHARS else "...\n" + text[-TRACEBACK_CHARS:]


def _kill_group(pid: int) -> None:
    # With bubblewrap this is bwrap and its group; --die-with-parent and the PID namespace take down
    # everything inside, setsid'd or double-forked children included.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _stop(procs: list[subprocess.Popen[bytes]], root: Path, *, now: bool) -> None:
    """End both processes and reap them in the background: tearing down a sandbox's namespaces takes
    tens of milliseconds the caller need not wait for. After a verdict both exit by themselves (the
    judge is done; the code's process sees its channel close), which keeps their CPU time accounted to
    this process; whatever is still there after the grace period, or at once when ``now``, is killed.
    The run's folder goes again once they are gone, in case something was still writing into it."""
    if now:
        for proc in procs:
            _kill_group(proc.pid)
    if procs:

        def reap() -> None:
            deadline = time.monotonic() + GRACE_S
            for proc in procs:
                try:
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    _kill_group(proc.pid)
                    proc.wait()
            if root.exists():
                _remove_tree(root)

        threading.Thread(target=reap, name="sandbox-reaper", daemon=True).start()


def _wait_readable(fd: int, timeout: float) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0.0, timeout) * 1000))


def _returncode(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


async def _until_readable(fd: int, timeout: float) -> bool:
    loop = asyncio.get_running_loop()
    ready = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await asyncio.wait_for(ready, timeout)
        return True
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)


async def _areturncode(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    return proc.returncode


def _remove_tree(root: Path) -> None:
    def retry(func: Any, path: str, _exc: Any) -> None:
        # The candidate may have removed permissions on something it created. chmod follows symlinks, so
        # never on one (the code's process may still be alive and swapping entries).
        try:
            for target in (os.path.dirname(path), path):
                if not os.path.islink(target):
                    os.chmod(target, 0o700)
            func(path)
        except OSError:
            pass

    shutil.rmtree(root, onerror=retry)


def run_code(code: str, tests: str | Sequence[str] = "", limits: SandboxLimits | None = None) -> SandboxResult:
    """Run ``code`` then ``tests`` in sandboxed subprocesses and classify the result.

    ``tests`` is one block of test code, or a list of test snippets (e.g. assert statements) that run
    one after another against the code's names, stopping at the first failure, which is then named.
    The code runs with ``__name__ == "__solution__"``, so its ``if __name__ == "__main__":`` demo
    block (which may read stdin) is skipped. Blocking; safe to call from several threads at once.
    Raises OSError only when no subprocess can be started at all.
    """
    limits = limits or SandboxLimits()
    job = _Job.create(code, tests, limits)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        start = time.monotonic()
        procs.append(subprocess.Popen(job.code_argv, **job.popen_kwargs("code")))
        procs.append(subprocess.Popen(job.judge_argv, **job.popen_kwargs("judge")))
        job.started()
        finished = _wait_readable(job.done, limits.wall_seconds + GRACE_S)
        duration = time.monotonic() - start
        candidate, judge = procs
        judge_rc = _returncode(judge, GRACE_S) if finished and job.verdict() is None else None
        code_rc = _returncode(candidate, GRACE_S) if finished and job.lost_code() else None
        result = job.finish(judge_rc, code_rc, not finished, duration)
        procs, done = [], procs  # a verdict: the processes may end by themselves
        _stop(done, job.root, now=False)
        return result
    finally:
        _stop(procs, job.root, now=True)
        job.close()


async def arun_code(code: str, tests: str | Sequence[str] = "", limits: SandboxLimits | None = None) -> SandboxResult:
    """``run_code`` for the engine's event loop: the verdict is awaited, never blocking the loop.

    Cancelling the task kills both children's process groups and removes the temporary directory.
    """
    limits = limits or SandboxLimits()
    job = _Job.create(code, tests, limits)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        start = time.monotonic()
        procs.append(subprocess.Popen(job.code_argv, **job.popen_kwargs("code")))
        procs.append(subprocess.Popen(job.judge_argv, **job.popen_kwargs("judge")))
        job.started()
        finished = await _until_readable(job.done, limits.wall_seconds + GRACE_S)
        duration = time.monotonic() - start
        candidate, judge = procs
        judge_rc = await _areturncode(judge, GRACE_S) if finished and job.verdict() is None else None
        code_rc = await _areturncode(candidate, GRACE_S) if finished and job.lost_code() else None
        result = job.finish(judge_rc, code_rc, not finished, duration)
        procs, done = [], procs  # a verdict: the processes may end by themselves
        _stop(done, job.root, now=False)
        return result
    finally:
        _stop(procs, job.root, now=True)
        job.close()
