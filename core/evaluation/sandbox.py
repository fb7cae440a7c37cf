"""Run candidate code plus tests in a separate, resource-limited Python subprocess.

Every run gets a fresh temporary directory (deleted afterwards), a minimal environment (PATH and LANG
only, so API keys never reach candidate code), ``python -I -S`` (no PYTHON* variables, no user site,
no .pth hooks, no script/cwd on sys.path; site-packages stay importable), CPU/memory/file-size
rlimits, a wall-clock limit that kills the whole process group, and capped output. A small runner
script inside the child compiles and executes the code, then the tests, and writes its verdict as
records to an inherited, unlinked temporary file, so nothing the candidate prints can spoof it.

This contains mistakes (infinite loops, memory bombs, crashes, leaked secrets); it is not a security
boundary against deliberately hostile code (there is no network or filesystem jail).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import marshal
import math
import os
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO, Any


class Outcome(StrEnum):
    PASSED = "PASSED"
    WRONG_ANSWER = "WRONG_ANSWER"
    TIME_LIMIT_EXCEEDED = "TIME_LIMIT_EXCEEDED"
    MEMORY_LIMIT_EXCEEDED = "MEMORY_LIMIT_EXCEEDED"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    SYNTAX_ERROR = "SYNTAX_ERROR"


@dataclass
class SandboxLimits:
    wall_seconds: float = 10.0
    cpu_seconds: float = 10.0
    memory_mb: int = 512
    output_chars: int = 8000


@dataclass
class SandboxResult:
    outcome: Outcome
    passed: bool
    failing_test: str = ""  # the assert/test that failed (or was running when the run was stopped)
    traceback: str = ""  # trimmed; only candidate/test frames, never the runner's
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    tests_passed: int = 0  # test units that ran clean (a string of tests counts as one unit)
    tests_total: int = 0

    def summary(self) -> str:
        """One line for the Manager, the results pane and logs."""
        text = str(self.outcome)
        if self.tests_total:
            text += f" ({self.tests_passed}/{self.tests_total} tests passed)"
        if self.failing_test:
            # Name the test by its first line that is not an import prefix (extract_tests adds those).
            lines = [line.strip() for line in self.failing_test.strip().splitlines() if line.strip()]
            named = [line for line in lines if not line.startswith(("import ", "from "))] or lines
            text += f": {named[0][:200]}"
        if not self.passed and self.traceback:
            last = self.traceback.strip().splitlines()[-1]
            if last not in text:
                text += f" — {last[:200]}"
        return text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["outcome"] = str(self.outcome)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxResult:
        values = dict(data)
        values["outcome"] = Outcome(values["outcome"])
        return cls(**values)


TRACEBACK_CHARS = 3000
_GRACE_S = 0.5  # the runner stops itself at wall_seconds; the parent's SIGKILL is the backstop
_FILE_BYTES = 64 * 2**20  # per-file write limit: output spam or disk bombs cannot fill the disk
_OUTPUT_MARK = "\n... [output truncated]"

# The runner executes inside the child, started with -S: `site` (and the .pth files it runs) costs more
# than everything else together, so the runner puts site-packages on sys.path itself. Its startup is
# most of the per-run overhead, so it imports only built-in modules (`posix`, not `os`; `_signal`, not
# `signal`, which pulls in enum; marshal, not json, which pulls in re), traceback and friends only when
# something failed, and it arrives compiled: the bootstrap script written into the temp dir execs the
# code object marshalled into the payload (compiling it in every child would cost more than the rest).
RUNNER_NAME = "<sandbox-runner>"
_BOOTSTRAP = """import marshal, sys
with open(sys.argv[2], "rb") as fh:
    PAYLOAD = marshal.load(fh)
RUNNER_NAME = PAYLOAD.pop("runner_name")
exec(PAYLOAD.pop("runner"))
"""
_RUNNER = r'''
import builtins, gc, io, posix, sys, time
import _signal, resource

_START = time.monotonic()
RESULT_FD = int(sys.argv[1])
_RESERVE = bytearray(2 * 2**20)  # freed on MemoryError so the verdict can still be written
SOURCES = {}


class TimeLimitExceeded(BaseException):
    """Raised by our timers; a BaseException so `except Exception` in candidate code can't eat it."""


def _on_timer(signum, frame):
    kind = "wall-clock" if signum == _signal.SIGALRM else "CPU time"
    raise TimeLimitExceeded(f"{kind} limit reached")


def _limit(kind, soft, hard=None):
    cur_soft, cur_hard = resource.getrlimit(kind)
    hard = soft if hard is None else hard
    if cur_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, cur_hard), min(hard, cur_hard)
    try:
        resource.setrlimit(kind, (soft, hard))
    except (ValueError, OSError):
        pass


class Capped(io.TextIOBase):
    """stdout/stderr that drop everything past the cap instead of filling the disk."""

    def __init__(self, inner, cap):
        self.inner, self.left = inner, cap

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.left > 0:
            part = text[: self.left]
            self.inner.write(part)
            self.left -= len(part)
        return len(text)

    def flush(self):
        self.inner.flush()

    def writable(self):
        return True

    def fileno(self):
        return self.inner.fileno()

    @property
    def encoding(self):
        return self.inner.encoding

    @property
    def buffer(self):
        return self.inner.buffer


def emit(record):
    # One repr() per line (repr escapes newlines); the parent reads it back with ast.literal_eval.
    data = (repr(record) + "\n").encode("utf-8", "backslashreplace")
    while data:
        data = data[posix.write(RESULT_FD, data):]


def statement(filename, lineno):
    """The innermost simple statement on that line, whole even when it spans several lines."""
    import ast, textwrap

    lines = SOURCES.get(filename, "").splitlines(True)
    if not lines or not lineno:
        return ""
    start, end = lineno, lineno
    try:
        spans = [
            (node.end_lineno - node.lineno, node.lineno, node.end_lineno)
            for node in ast.walk(ast.parse("".join(lines)))
            if isinstance(node, ast.stmt) and not hasattr(node, "body")
            and node.lineno <= lineno <= (node.end_lineno or node.lineno)
        ]
        if spans:
            _, start, end = min(spans)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        pass
    return textwrap.dedent("".join(lines[start - 1 : end])).strip()[:1000]


def register_sources():
    import linecache

    for name, src in SOURCES.items():
        linecache.cache[name] = (len(src), None, src.splitlines(True), name)


def format_tb(exc):
    import traceback

    register_sources()
    te = traceback.TracebackException.from_exception(exc)
    # Keep candidate/test frames (and library frames they called), never the runner's own.
    ours = (__file__, RUNNER_NAME)
    te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename not in ours])
    text = "".join(te.format())
    if len(text) > TB_CHARS:
        text = "...\n" + text[-TB_CHARS:]
    return text


def execute(code_obj, ns):
    try:
        exec(code_obj, ns)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return exc
    except BaseException as exc:  # noqa: BLE001 - classify everything the candidate raises
        return exc
    return None


def classify(exc, unit_name, unit_src, ns):
    if isinstance(exc, MemoryError):
        global _RESERVE
        _RESERVE = None
        ns.clear()
        import traceback

        traceback.clear_frames(exc.__traceback__)
        gc.collect()
        outcome = "MEMORY_LIMIT_EXCEEDED"
    elif isinstance(exc, TimeLimitExceeded):
        outcome = "TIME_LIMIT_EXCEEDED"
    elif isinstance(exc, AssertionError):
        outcome = "WRONG_ANSWER"
    else:
        outcome = "RUNTIME_ERROR"
    failing = unit_src.strip() if unit_src is not None else ""
    # In the solution itself only a failed assert is a "failing test"; other errors are in the traceback.
    if not failing and (unit_name != "<solution>" or outcome == "WRONG_ANSWER"):
        import traceback

        # The deepest frame in this unit names the failing statement (e.g. the assert inside check()).
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == unit_name]
        if frames:
            failing = statement(unit_name, frames[-1].lineno)
    return {"outcome": outcome, "failing_test": failing, "traceback": format_tb(exc)}


def run(payload):
    code, tests = payload["code"], payload["tests"]
    ns = {"__name__": "__solution__", "__builtins__": builtins}
    if isinstance(tests, str):
        # One block of tests: the failing line is found from the traceback.
        units = [("<tests>", tests, None)] if tests.strip() else []
    else:
        units = [(f"<test {i + 1}>", src, src) for i, src in enumerate(tests)]
    total = len(units)
    base = {"tests_total": total, "tests_passed": 0}
    compiled = []
    for name, src, label in [("<solution>", code, "")] + units:
        SOURCES[name] = src
        try:
            compiled.append(compile(src, name, "exec", dont_inherit=True))
        except (SyntaxError, ValueError) as exc:  # ValueError: source with NUL bytes
            import traceback

            where = "" if name == "<solution>" else (label or "tests")
            text = "".join(traceback.format_exception_only(exc))
            return {**base, "outcome": "SYNTAX_ERROR", "failing_test": where, "traceback": text}
    code_obj, test_objs = compiled[0], compiled[1:]
    emit({"phase": "code"})
    exc = execute(code_obj, ns)
    if exc is not None:
        return {**base, **classify(exc, "<solution>", "", ns)}
    for i, ((name, src, label), obj) in enumerate(zip(units, test_objs)):
        emit({"phase": "test", "index": i})
        exc = execute(obj, ns)
        if exc is not None:
            return {**base, "tests_passed": i, **classify(exc, name, label, ns)}
    return {**base, "tests_passed": total, "outcome": "PASSED", "failing_test": "", "traceback": ""}


def main():
    global TB_CHARS
    payload = PAYLOAD  # loaded by the bootstrap script
    sys.path.extend(payload["site_packages"])  # third-party imports work; no .pth files run
    import _sitebuiltins  # exit()/quit() as `site` would define them

    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    limits = payload["limits"]
    TB_CHARS = payload["traceback_chars"]
    _limit(resource.RLIMIT_AS, limits["memory_bytes"])
    _limit(resource.RLIMIT_CPU, limits["cpu_seconds"], limits["cpu_seconds"] + 1)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_FSIZE, limits["file_bytes"])
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)  # over-size writes fail with OSError instead
    _signal.signal(_signal.SIGXCPU, _on_timer)
    _signal.signal(_signal.SIGALRM, _on_timer)
    sys.stdout = Capped(sys.stdout, limits["output_chars"] + 1)
    sys.stderr = Capped(sys.stderr, limits["output_chars"] + 1)
    remaining = max(0.01, limits["wall_seconds"] - (time.monotonic() - _START))
    _signal.setitimer(_signal.ITIMER_REAL, remaining)
    try:
        try:
            result = run(payload)
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            _signal.signal(_signal.SIGXCPU, _signal.SIG_IGN)
    except TimeLimitExceeded as exc:  # fired between the runner's own statements
        result = {"outcome": "TIME_LIMIT_EXCEEDED", "failing_test": "", "traceback": str(exc)}
    emit({"result": result})
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        posix._exit(0)  # skip candidate atexit hooks and non-daemon threads


main()
'''


@dataclass
class _Job:
    """Everything one run needs on disk; removed by ``close``."""

    root: Path
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    result: IO[bytes]
    stdout: IO[bytes]
    stderr: IO[bytes]
    tests: str | list[str]
    limits: SandboxLimits

    @classmethod
    def create(cls, code: str, tests: str | Sequence[str], limits: SandboxLimits) -> _Job:
        root = Path(tempfile.mkdtemp(prefix="swarm-sandbox-"))
        try:
            cwd = root / "work"
            cwd.mkdir()
            test_value: str | list[str] = tests if isinstance(tests, str) else [str(t) for t in tests]
            payload = {
                "code": code,
                "tests": test_value,
                "traceback_chars": TRACEBACK_CHARS,
                "site_packages": _site_packages(),
                "runner": _runner_code(),
                "runner_name": RUNNER_NAME,
                "limits": {
                    "wall_seconds": float(limits.wall_seconds),
                    "cpu_seconds": max(1, math.ceil(limits.cpu_seconds)),
                    "memory_bytes": int(limits.memory_mb) * 2**20,
                    "file_bytes": _FILE_BYTES,
                    "output_chars": int(limits.output_chars),
                },
            }
            (root / "payload.bin").write_bytes(marshal.dumps(payload))
            (root / "runner.py").write_text(_BOOTSTRAP, encoding="utf-8")
            # Unlinked files: the candidate can't reach the verdict file by path.
            result = tempfile.TemporaryFile(dir=root)  # noqa: SIM115 - closed by close()
            stdout = tempfile.TemporaryFile(dir=root)  # noqa: SIM115
            stderr = tempfile.TemporaryFile(dir=root)  # noqa: SIM115
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        runner, payload_path = str(root / "runner.py"), str(root / "payload.bin")
        argv = [sys.executable, "-I", "-S", "-B", runner, str(result.fileno()), payload_path]
        env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": os.environ.get("LANG", "C.UTF-8")}
        return cls(root, argv, env, cwd, result, stdout, stderr, test_value, limits)

    def popen_kwargs(self) -> dict[str, Any]:
        return {
            "stdin": subprocess.DEVNULL,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "cwd": self.cwd,
            "env": self.env,
            "pass_fds": (self.result.fileno(),),
            "start_new_session": True,  # own process group, so a timeout kills its children too
        }

    def close(self) -> None:
        for fh in (self.result, self.stdout, self.stderr):
            fh.close()
        _remove_tree(self.root)

    def finish(self, returncode: int | None, killed: bool, duration: float) -> SandboxResult:
        records = _read_records(self.result)
        stdout = _read_capped(self.stdout, self.limits.output_chars)
        stderr = _read_capped(self.stderr, self.limits.output_chars)
        total = len(self.tests) if isinstance(self.tests, list) else (1 if self.tests.strip() else 0)
        verdict = next((r["result"] for r in reversed(records) if isinstance(r.get("result"), dict)), None)
        if verdict is not None:
            outcome = _outcome(verdict.get("outcome"))
            return SandboxResult(
                outcome=outcome,
                passed=outcome is Outcome.PASSED,
                failing_test=str(verdict.get("failing_test", "")),
                traceback=_trim(str(verdict.get("traceback", ""))),
                stdout=stdout,
                stderr=stderr,
                duration_s=duration,
                tests_passed=int(verdict.get("tests_passed", 0)),
                tests_total=int(verdict.get("tests_total", total)),
            )
        # No verdict: the child was killed or died. The last phase marker says where it was.
        phase = next((r for r in reversed(records) if "phase" in r), {})
        failing, passed_units = "", 0
        if phase.get("phase") == "test":
            passed_units = int(phase.get("index", 0))
            if isinstance(self.tests, list) and passed_units < len(self.tests):
                failing = self.tests[passed_units].strip()
        outcome, why = _classify_death(returncode, killed, duration, self.limits)
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
    returncode: int | None, killed: bool, duration: float, limits: SandboxLimits
) -> tuple[Outcome, str]:
    if killed:
        return Outcome.TIME_LIMIT_EXCEEDED, f"killed after the {limits.wall_seconds:g}s wall-clock limit"
    if returncode == -signal.SIGXCPU:
        return Outcome.TIME_LIMIT_EXCEEDED, f"killed after the {limits.cpu_seconds:g}s CPU limit"
    if returncode == -signal.SIGKILL:
        # Not our kill: the CPU hard limit (only reachable after at least cpu_seconds) or the OOM killer.
        if duration >= limits.cpu_seconds:
            return Outcome.TIME_LIMIT_EXCEEDED, f"killed after the {limits.cpu_seconds:g}s CPU limit"
        why = f"killed, most likely out of memory ({limits.memory_mb} MB limit)"
        return Outcome.MEMORY_LIMIT_EXCEEDED, why
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
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
        return text[:chars] + _OUTPUT_MARK
    return text


def _trim(text: str) -> str:
    return text if len(text) <= TRACEBACK_CHARS else "...\n" + text[-TRACEBACK_CHARS:]


@functools.cache
def _runner_code() -> types.CodeType:
    return compile(_RUNNER, RUNNER_NAME, "exec", dont_inherit=True)


@functools.cache
def _site_packages() -> list[str]:
    """This interpreter's site-packages, for the child that starts without `site`."""
    return [path for path in site.getsitepackages() if os.path.isdir(path)]


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _remove_tree(root: Path) -> None:
    def retry(func: Any, path: str, _exc: Any) -> None:
        # The candidate may have removed permissions on something it created.
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass

    shutil.rmtree(root, onerror=retry)


def run_code(code: str, tests: str | Sequence[str] = "", limits: SandboxLimits | None = None) -> SandboxResult:
    """Run ``code`` then ``tests`` in a sandboxed subprocess and classify the result.

    ``tests`` is one block of test code, or a list of test snippets (e.g. assert statements) that run
    one after another in the code's namespace, stopping at the first failure, which is then named.
    The code runs with ``__name__ == "__solution__"``, so its ``if __name__ == "__main__":`` demo
    block (which may read stdin) is skipped. Blocking; safe to call from several threads at once.
    Raises OSError only when no subprocess can be started at all.
    """
    limits = limits or SandboxLimits()
    job = _Job.create(code, tests, limits)
    try:
        start = time.monotonic()
        proc = subprocess.Popen(job.argv, **job.popen_kwargs())
        killed = False
        try:
            proc.wait(timeout=limits.wall_seconds + _GRACE_S)
        except subprocess.TimeoutExpired:
            killed = True
            _kill_group(proc.pid)
            proc.wait()
        finally:
            _kill_group(proc.pid)  # background children left behind
            if proc.returncode is None:
                proc.wait()
        return job.finish(proc.returncode, killed, time.monotonic() - start)
    finally:
        job.close()


async def arun_code(code: str, tests: str | Sequence[str] = "", limits: SandboxLimits | None = None) -> SandboxResult:
    """``run_code`` for the engine's event loop: the child is awaited, never blocking the loop.

    Cancelling the task kills the child's process group and removes the temporary directory.
    """
    limits = limits or SandboxLimits()
    job = _Job.create(code, tests, limits)
    try:
        start = time.monotonic()
        proc = await asyncio.create_subprocess_exec(*job.argv, **job.popen_kwargs())
        killed = False
        try:
            await asyncio.wait_for(proc.wait(), timeout=limits.wall_seconds + _GRACE_S)
        except TimeoutError:
            killed = True
            _kill_group(proc.pid)
            await proc.wait()
        finally:
            _kill_group(proc.pid)
        return job.finish(proc.returncode, killed, time.monotonic() - start)
    finally:
        job.close()
