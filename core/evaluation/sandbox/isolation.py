"""Isolation: bubblewrap's arguments for a run (probed once), or the note that code runs without it."""

from __future__ import annotations

import contextvars
import ctypes
import ctypes.util
import functools
import os
import shutil
import site
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from core.evaluation.sandbox.limits import TMP_BYTES

ISOLATION_ENV = "SWARM_SANDBOX_ISOLATION"  # "off" runs without bubblewrap even where it works
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
# The /etc files Python needs (the loader's cache; time zone, users and hosts for the stdlib); nothing with
# secrets. Few, since every mount costs at start and at exit.
ETC = ("ld.so.cache", "localtime", "passwd", "group", "hosts", "nsswitch.conf")


@dataclass(frozen=True)
class _Isolation:
    bwrap: list[str] | None  # bwrap and its fixed arguments; None: run without isolation
    sized: bool  # this bwrap knows --size
    message: str


class IsolationRefused(PermissionError):
    """Model-written code would run without isolation and nobody accepted that; the message is one line
    saying why and how to get isolation (an OSError, as the sandbox's other failures to start are)."""


# Whether model-written code may run where it cannot be isolated: the process's choice (--allow-unisolated-code,
# allow_unisolated_code in the config) or one run's (an MCP client's argument, in that run's task only).
_ALLOWED_PROCESS = False
_ALLOWED_HERE: contextvars.ContextVar[bool] = contextvars.ContextVar("swarm_allow_unisolated", default=False)


def allow_unisolated_code(allowed: bool = True, *, here_only: bool = False) -> None:
    """Accept (or not) that model-written code runs with the user's own rights where bubblewrap cannot
    isolate it: for the whole process, or ``here_only`` for this asyncio task and what it starts."""
    global _ALLOWED_PROCESS
    if here_only:
        _ALLOWED_HERE.set(allowed)
    else:
        _ALLOWED_PROCESS = allowed


def unisolated_allowed() -> bool:
    return _ALLOWED_PROCESS or _ALLOWED_HERE.get()


def how_to_isolate() -> str:
    if not sys.platform.startswith("linux"):
        return "bubblewrap needs Linux: run swarm-tui in a Linux VM or container that has it"
    return "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap or pacman -S bubblewrap)"


def unisolated_refusal() -> str:
    """"" when model code may run (it is isolated, or running it unisolated was accepted); else one line
    saying why it is refused and how to get isolation or accept the risk."""
    isolation = probe_isolation()
    if isolation.bwrap is not None or unisolated_allowed():
        return ""
    why = isolation.message.removeprefix("code runs without isolation: ").split("; install it with")[0]
    return (f"model-written code is not run without isolation ({why}): it could read your files and API keys; "
            f"{how_to_isolate()}, or accept the risk with --allow-unisolated-code "
            "(config: allow_unisolated_code = true)")


def protect_process() -> bool:
    """Linux: make this process non-dumpable (prctl PR_SET_DUMPABLE 0), so that other processes of the same
    user (model code run without isolation among them) cannot read its /proc/<pid>/environ (the API key)
    or its memory, nor attach a debugger. Whether it took effect; a no-op elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(4, 0, 0, 0, 0)) == 0  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        return False


def isolation_status() -> tuple[bool, str]:
    """Whether code runs isolated (bubblewrap), and one line saying so, for the UI/CLI to show once."""
    isolation = probe_isolation()
    return isolation.bwrap is not None, isolation.message


def python_binary() -> str:
    """The real interpreter binary: a venv's bin/python is a symlink into a prefix the sandbox binds."""
    return os.path.realpath(sys.executable)


def _bwrap_fixed(options: str, no_nested_userns: bool) -> list[str]:
    args = ["--unshare-all", "--die-with-parent", "--new-session"]
    if "--as-pid-1" in options:
        # The interpreter is the namespace's PID 1 (no bwrap reaper): when it exits, the kernel kills
        # everything left in the namespace, and its CPU time is accounted to this process (bwrap's
        # reaper reports the exit through an eventfd and is never waited for).
        args.append("--as-pid-1")
    if no_nested_userns:  # no user namespace of its own inside, where it would have capabilities again
        args += ["--unshare-user", "--disable-userns"]
    if os.geteuid() == 0:  # as root bwrap keeps capabilities in its user namespace unless told
        args += ["--cap-drop", "ALL"]
    bound: list[str] = []

    def ro_bind(path: str) -> None:
        real = os.path.realpath(path)
        if not os.path.isdir(real) or any(real == b or real.startswith(b.rstrip("/") + "/") for b in bound):
            return
        bound.append(real)
        args.extend(["--ro-bind", real, real])

    ro_bind("/usr")
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{name}"
        if os.path.islink(path):
            args.extend(["--symlink", os.readlink(path), path])
        else:
            ro_bind(path)
    for name in ETC:
        args.extend(["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"])
    for path in python_paths():
        ro_bind(path)
    # As root, the sandbox's uid 0 is the host's, and sysctl files check the uid, not capabilities: without
    # this, code could write kernel.core_pattern. (bwrap only covers /proc/sys when the directory is writable.)
    return [*args, "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]


def python_paths() -> list[str]:
    """What the interpreter needs to see: its prefixes, its binary's folder and the site-packages."""
    return [sys.base_prefix, sys.base_exec_prefix, os.path.dirname(python_binary()), *site_packages()]


def rebind_under_tmp() -> list[str]:
    """The private /tmp hides whatever was bound beneath it: a venv (or a checkout) living under /tmp is
    bound again on top, read-only."""
    out: list[str] = []
    for path in dict.fromkeys(os.path.realpath(p) for p in python_paths()):
        if (path == "/tmp" or path.startswith("/tmp/")) and os.path.isdir(path):
            out += ["--ro-bind", path, path]
    return out


def bwrap_argv(isolation: _Isolation, work: str) -> list[str]:
    """The bubblewrap command line for one run, up to the interpreter."""
    assert isolation.bwrap is not None
    size = ["--size", str(TMP_BYTES)] if isolation.sized else []
    return [
        *isolation.bwrap,
        *size, "--tmpfs", "/dev/shm",
        "--remount-ro", "/dev",
        *size, "--tmpfs", "/tmp",
        *rebind_under_tmp(),
        "--bind", work, work,
        "--chdir", work,
        "--clearenv",
        "--setenv", "PATH", SANDBOX_PATH,
        "--setenv", "LANG", os.environ.get("LANG", "C.UTF-8"),
        "--setenv", "HOME", work,
        "--remount-ro", "/",
        "--",
    ]  # fmt: skip


@functools.cache
def probe_isolation() -> _Isolation:
    """Probe bubblewrap once: a sandboxed `python -c pass` with a run's exact mounts must work."""
    if os.environ.get(ISOLATION_ENV, "").strip().lower() in ("off", "0", "no", "false"):
        return _Isolation(None, False, f"code runs without isolation: turned off by {ISOLATION_ENV}")
    if not sys.platform.startswith("linux"):
        return _Isolation(None, False, "code runs without isolation: bubblewrap (bwrap) needs Linux")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        why = "bubblewrap (bwrap) not found; install it with apt-get install bubblewrap"
        return _Isolation(None, False, f"code runs without isolation: {why}")
    try:
        usage = subprocess.run([bwrap, "--help"], stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        options = usage.stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError) as exc:
        return _Isolation(None, False, f"code runs without isolation: bubblewrap (bwrap) failed here ({exc})")
    sized = "--size" in options
    why = ""
    # Newer options first; without them (older bwrap, or no unprivileged user namespaces) it still isolates.
    for no_nested_userns in dict.fromkeys(["--disable-userns" in options, False]):
        isolation = _Isolation([bwrap, *_bwrap_fixed(options, no_nested_userns)], sized, "")
        work = tempfile.mkdtemp(prefix="swarm-sandbox-probe-")
        try:
            argv = [*bwrap_argv(isolation, work), python_binary(), "-I", "-S", "-B", "-c", "pass"]
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env={}, timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            why = str(exc)
            continue
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if proc.returncode == 0:
            message = "code runs isolated with bubblewrap: no network, read-only file system, own process namespace"
            return _Isolation(isolation.bwrap, sized, message)
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1] if lines else f"exit code {proc.returncode}"
    return _Isolation(None, False, f"code runs without isolation: bubblewrap (bwrap) failed here ({why[:200]})")




@functools.cache
def site_packages() -> list[str]:
    """This interpreter's site-packages, for the child that starts without `site`."""
    return [path for path in site.getsitepackages() if os.path.isdir(path)]
