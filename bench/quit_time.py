"""Quit: time from the quit key to the process's exit, while MiniLM may still be loading.

``swarm-tui`` (the form; with --problem ``swarm-tui --demo PROBLEM``) runs in a pseudo-terminal
(120x40). As soon as the first frame is on screen (the launch form's "Problem" label; with --problem the
run screen's "DEMO") the bench sends ctrl+q (with --problem: q, then y to the "quit?" dialog) and stops
the clock when the process has exited. MiniLM and torch load in a background thread for the first
seconds; quitting must not wait for them.

Target: <= 0.5 s.

    .venv/bin/python bench/quit_time.py [--runs 5] [--problem] [--settle SECONDS]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 0.5


def command(with_problem: bool) -> list[str]:
    # This checkout's code (not whatever `swarm-tui` is installed): python -m tui.
    return [sys.executable, "-m", "tui", *(["--demo", "What is 2+2?"] if with_problem else [])]  # no problem: the form


def _read(fd: int, seen: bytearray, wait: float) -> bool:
    """Read what the app wrote within ``wait`` seconds; False once the pty is closed."""
    ready, _, _ = select.select([fd], [], [], wait)
    if not ready:
        return True
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        return False
    seen += chunk
    return bool(chunk)


def quit_seconds(argv: list[str], marker: bytes, keys: list[bytes], settle: float = 0.0,
                 timeout: float = 30.0) -> float:
    pid, fd = pty.fork()
    if pid == 0:  # child: the app, in the pty
        os.chdir(ROOT)
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40",
               "PYTHONPATH": str(ROOT),
               "SWARM_TUI_SESSIONS_DIR": os.path.join(tempfile.gettempdir(), "swarm-tui-quit-bench")}
        os.execve(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    seen = bytearray()
    try:
        start = time.perf_counter()
        while marker not in seen:
            if time.perf_counter() - start > timeout or not _read(fd, seen, 0.05):
                raise RuntimeError(f"no first frame within {timeout:.0f} s; output began {bytes(seen[:200])!r}")
        end_settle = time.perf_counter() + settle
        while time.perf_counter() < end_settle:
            _read(fd, seen, 0.05)
        pressed = time.perf_counter()
        for i, key in enumerate(keys):
            os.write(fd, key)
            if i < len(keys) - 1:  # let the dialog open before answering it
                wait_end = time.perf_counter() + 0.3
                while time.perf_counter() < wait_end:
                    _read(fd, seen, 0.02)
        while True:
            done, _status = os.waitpid(pid, os.WNOHANG)
            if done:
                return time.perf_counter() - pressed - 0.3 * (len(keys) - 1)
            if time.perf_counter() - pressed > timeout:
                raise RuntimeError(f"still running {timeout:.0f} s after the quit key")
            _read(fd, seen, 0.01)  # keep draining, or the app blocks writing to a full pty
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--problem", action="store_true", help="quit from a running swarm (q, then y)")
    parser.add_argument("--settle", type=float, default=0.5,
                        help="seconds between the first frame and the key (keys sent sooner can be lost)")
    args = parser.parse_args()
    argv = command(args.problem)
    marker = b"DEMO" if args.problem else b"Problem"
    keys = [b"q", b"y"] if args.problem else [b"\x11"]  # ctrl+q
    times = [quit_seconds(argv, marker, keys, args.settle) for _ in range(args.runs)]
    print(f"swarm-tui --demo{' PROBLEM' if args.problem else ''}: quit to exit in median "
          f"{statistics.median(times):.2f} s, max {max(times):.2f} s over {args.runs} runs (target <= {TARGET_S} s)")
    return 0 if statistics.median(times) <= TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
