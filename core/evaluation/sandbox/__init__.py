"""Run candidate code against tests in sandboxed subprocesses, and classify the result.

Threat model. ``code`` is hostile: model-written, it may try to read the app's secrets (API keys in the
environment or in files), reach the network, write outside its folder, signal or outlive the app, or
forge a passing verdict. ``tests`` are trusted only to be honest about their own verdict: in benchmark
scoring they are the dataset's hidden ``check()``; in the per-round evaluator they are model-written too,
and a test that fakes its own pass only fools the team that wrote it. Both are jailed alike, so neither
can harm the machine or read anything of the app's.

Two processes per run. The CANDIDATE executes ``code`` and then serves requests; the JUDGE (the trusted
runner) runs the tests and alone holds the verdict channel, an unlinked temporary file the parent reads.
Every name the code defined appears in the tests' namespace: plain data as a copy, anything else
(functions, classes, instances, modules) as a proxy whose every use (call, attribute, item, len, iter,
arithmetic, ...) is a request over a pipe to the candidate. Answers are plain data in tagged JSON
(numbers, strings, bytes, lists, tuples, dicts, sets, Fraction, Decimal, numpy arrays), handles to further
objects, or exceptions (type, args, message, frames), and the judge decodes them itself: no object of the
code ever exists in the judge, so a rigged ``__eq__`` cannot cross and ``==``, ``<`` and ``in`` are decided
by the judge on its own data (``==`` on a proxy is identity, except that two dataclass instances compare
their fields, fetched as data; ``in`` iterates). Exceptions come back as built-in types (or same-named
stand-ins), never SystemExit/KeyboardInterrupt/StopIteration, and a dead or garbled channel fails the
run, whatever the tests catch. The code's names never replace built-ins in the tests (its ``def abs``
cannot decide ``assert abs(got - want) < 1e-6``); list/dict/set arguments the code changes in place are
copied back. What the tests pass to the code must be plain data, functions or iterators (the code may
call those, and nothing else of the judge). Limits of the model: the code's module-level data is a copy
taken when it finished loading, async functions cannot be awaited from the tests, and data costs about a
microsecond per element to cross.

Isolation. Where bubblewrap works (Linux, ``bwrap`` installed, namespaces allowed; probed once), each
process runs in its own user, PID, network, IPC, UTS and cgroup namespaces with a fresh /proc (the app's
processes and their ``/proc/<pid>/environ`` are invisible, signals cannot reach them, and everything in
the sandbox dies with it), no network (a private loopback), all capabilities dropped, a new session, and
a read-only view of only what Python needs (/usr, /lib*, a few /etc files, the interpreter's prefix and
site-packages): home directories, /work, the app's sessions and config are simply absent. The only
writable places are the run's fresh folder (also its cwd and HOME) and a small private /tmp. The
environment is PATH, LANG and HOME. When the app runs as root, the sandbox's uid 0 is the host's, so on
top of the dropped capabilities /proc/sys is read-only and nested user namespaces are disabled; process
counts are not limited (RLIMIT_NPROC does not bind root). Elsewhere the same two processes run with the
rlimits and minimal environment only, which contains mistakes but not deliberate attacks (the code could
reach the judge through /proc); ``isolation_status()`` says which (SWARM_SANDBOX_ISOLATION=off forces it).
Without isolation code is refused (``IsolationRefused``, one line: ``unisolated_refusal()``) unless the
user accepted the risk (``allow_unisolated_code``); the app makes itself non-dumpable at start
(``protect_process``) so that such code, of the same user, cannot read its /proc/<pid>/environ.

Limits in both modes: CPU, memory and file-size rlimits, a wall-clock limit (the judge's timer, then the
parent's SIGKILL), capped output, stdin from /dev/null, and a fresh temporary folder removed afterwards.

Modules: ``limits`` (what a run may use and returns), ``isolation`` (bubblewrap), ``child`` (the program
both processes run, its text in child_setup, child_peer and child_main), ``job`` (one run).
"""

from core.evaluation.sandbox.isolation import (
    ISOLATION_ENV,
    IsolationRefused,
    allow_unisolated_code,
    isolation_status,
    protect_process,
    unisolated_refusal,
)
from core.evaluation.sandbox.job import arun_code, run_code
from core.evaluation.sandbox.limits import Outcome, SandboxLimits, SandboxResult

__all__ = [
    "ISOLATION_ENV", "IsolationRefused", "Outcome", "SandboxLimits", "SandboxResult", "allow_unisolated_code",
    "arun_code", "isolation_status", "protect_process", "run_code", "unisolated_refusal",
]
