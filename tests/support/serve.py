"""``swarm-tui serve`` as a user starts it, for the CLI and browser tests: a real server process on 127.0.0.1,
started the way the console script starts (``-P``: the working folder is not on the import path), in a folder
of the test's choosing; what it printed, and a folder that tries to run code in place of the app."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.paths import ROOT

_ESCAPES = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def hostile_folder(where: Path) -> Path:
    """A folder such as any cloned repository could be: a ``tui`` package whose ``__main__`` (and import)
    leaves a marker file when run, and a ``sessions/`` folder holding a session. Returns the marker's path."""
    marker = where / "MARKER-code-from-the-working-folder-ran"
    (where / "tui").mkdir()
    for name in ("__init__.py", "__main__.py"):
        (where / "tui" / name).write_text(f"open({str(marker)!r}, 'w').write('ran')\n", encoding="utf-8")
    (where / "sessions").mkdir()
    (where / "sessions" / "old-run.json").write_text("{}", encoding="utf-8")
    return marker


def terminal_text(data: str) -> str:
    """What a terminal shows of ``data``, near enough to search: the escape sequences removed."""
    return _ESCAPES.sub("", data)


@dataclass
class Served:
    process: subprocess.Popen[str]
    port: int
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The address the server printed (its last stdout line)."""
        return self.stdout[-1] if self.stdout else ""

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stderr_now(self, settle: float = 0.3) -> list[str]:
        time.sleep(settle)
        return list(self.stderr)


def _pump(stream: object, into: list[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.append(line.rstrip("\n"))


@contextmanager
def serving(where: Path, *args: str, port: int | None = None, timeout: float = 60.0) -> Iterator[Served]:
    """``swarm-tui serve ARGS`` in ``where`` (its runs save there), until its address is printed; stopped with
    its whole process group (the shell and app per browser) on exit."""
    port = port or free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "SWARM_TUI_SESSIONS_DIR": str(where)}
    process = subprocess.Popen([sys.executable, "-P", "-m", "tui", "serve", "--port", str(port), *args],
                               cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    served = Served(process, port)
    for stream, lines in ((process.stdout, served.stdout), (process.stderr, served.stderr)):
        threading.Thread(target=_pump, args=(stream, lines), daemon=True).start()
    try:
        deadline = time.monotonic() + timeout
        while not served.stdout:
            assert process.poll() is None, "\n".join(served.stderr)
            assert time.monotonic() < deadline, "serve never printed its address"
            time.sleep(0.1)
        yield served
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
