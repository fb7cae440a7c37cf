"""Start-up: time from process start to the first frame of ``swarm-tui`` (the launch form; with ``--problem``
a demo run).

The command runs in a pseudo-terminal (120x40); the clock stops when the first frame's text reaches
the terminal (the launch form's "Problem" label, or with a problem the run screen's "DEMO"). MiniLM
loads in the background and must not delay that frame.

Target: <= 1.5 s.

    .venv/bin/python bench/startup.py [--runs 5] [--problem]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import shutil
import signal
import statistics
import struct
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def command(with_problem: bool) -> list[str]:
    exe = shutil.which("swarm-tui", path=str(Path(sys.executable).parent))
    base = [exe] if exe else [sys.executable, "-m", "tui"]
    return [*base, *(["--demo", "What is 2+2?"] if with_problem else [])]  # no problem: the form


def first_frame_seconds(argv: list[str], marker: bytes, timeout: float = 30.0) -> float:
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # child: the app, in the pty
        os.chdir(ROOT)
        # Sessions of these short-lived runs go to a scratch folder, not the user's.
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40",
               "SWARM_TUI_SESSIONS_DIR": os.path.join(tempfile.gettempdir(), "swarm-tui-startup-bench")}
        os.execve(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    seen = b""
    try:
        while time.perf_counter() - start < timeout:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
                if marker in seen:
                    return time.perf_counter() - start
        raise RuntimeError(f"no first frame within {timeout:.0f} s; output began {seen[:200]!r}")
    finally:
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + 5
        while time.time() < deadline and os.waitpid(pid, os.WNOHANG) == (0, 0):
            time.sleep(0.05)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--problem", action="store_true", help="start straight into the run screen")
    args = parser.parse_args()
    argv = command(args.problem)
    if not argv[0].startswith("/"):
        argv[0] = shutil.which(argv[0]) or argv[0]
    marker = b"DEMO" if args.problem else b"Problem"
    first_frame_seconds(argv, marker)  # warm the file cache once; not counted
    times = [first_frame_seconds(argv, marker) for _ in range(args.runs)]
    print(f"{' '.join(Path(a).name if i == 0 else a for i, a in enumerate(argv))}: first frame in "
          f"median {statistics.median(times):.2f} s, max {max(times):.2f} s over {args.runs} runs "
          f"(target <= 1.5 s)")
    return 0 if statistics.median(times) <= 1.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
