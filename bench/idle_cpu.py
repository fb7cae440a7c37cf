"""Idle CPU of the compare screen after quick key presses (issue 34, item 1).

``swarm-tui compare --demo`` (four methods) runs in a pseudo-terminal. Once every method has ended (the
columns say "done" and the screen has been quiet for a while), the bench measures the app's CPU time over a
quiet window, then sends → → with no pause between them (a fast typist; tmux send-keys Right Right), waits
a moment and measures another quiet window. Each round of presses is repeated: the spin it guards against
showed in some tries only. An idle screen uses next to no CPU; the spin used a whole core until quit.

CPU is read from /proc/PID/stat (user + system ticks of the app process), so the figure is the app's own.

Target: < 5 % of a core in each quiet window after the presses (the spin measured ~100 %).

    .venv/bin/python bench/idle_cpu.py [--rounds 5] [--window 3] [--size 80x24]
    PYTHONPATH=/path/to/another/checkout .venv/bin/python bench/idle_cpu.py   # measure that code instead
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.05  # of one core
RIGHT = b"\x1b[C"


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def drain(fd: int, seconds: float, seen: bytearray) -> None:
    """Read the app's output for ``seconds`` (the terminal must not fill up while we measure)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], min(left, 0.05))
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                return
            del seen[:-200_000]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of quick presses (default 5)")
    parser.add_argument("--window", type=float, default=3.0, help="seconds of each quiet window (default 3)")
    parser.add_argument("--size", default="80x24", help="terminal size, COLSxROWS (default 80x24)")
    args = parser.parse_args()
    cols, rows = (int(v) for v in args.size.split("x"))
    argv = [sys.executable, "-m", "tui", "compare", "--demo", "--domain", "math",
            "--strategy", "dytopo,topodim,dmoa,single", "What is 2+2?"]
    pid, fd = pty.fork()
    code = os.environ.get("PYTHONPATH", str(ROOT)).split(os.pathsep)[0]
    if pid == 0:  # child: the app, in the pty (this checkout's code, or PYTHONPATH's: `-m` imports from the cwd)
        os.chdir(code)
        env = {"TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows),
               "PYTHONPATH": code,
               "SWARM_TUI_SESSIONS_DIR": os.path.join(tempfile.gettempdir(), "swarm-tui-idle-bench"),
               **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COLUMNS", "LINES")}}
        os.execve(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    seen = bytearray()
    try:
        drain(fd, 25.0, seen)  # four demo methods end well within this; then the screen only ticks
        before = cpu_seconds(pid)
        drain(fd, args.window, seen)
        idle = (cpu_seconds(pid) - before) / args.window
        print(f"before any key: {idle:.1%} of a core over {args.window:g} s")
        worst = 0.0
        for number in range(1, args.rounds + 1):
            os.write(fd, RIGHT + RIGHT)  # both at once: the app reads them in one go
            drain(fd, 1.0, seen)
            before = cpu_seconds(pid)
            drain(fd, args.window, seen)
            share = (cpu_seconds(pid) - before) / args.window
            worst = max(worst, share)
            print(f"after → → #{number}: {share:.1%} of a core over {args.window:g} s")
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    ok = worst < TARGET
    print(f"worst quiet window after the presses: {worst:.1%} of a core (target < {TARGET:.0%}): "
          f"{'ok' if ok else 'SPINNING'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
