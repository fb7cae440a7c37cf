"""The append-only event log written next to a session while its run goes on: ``NAME.events.jsonl``.

The session file (``NAME.json``) is rewritten atomically at every round; following a live run by
re-reading it per event would be far too slow. The log is one JSON object per line, flushed per
event, so another process (``swarm-tui attach``, the session picker) reads only what is new:

* line 1 is a header: ``{"type": "log_header", "pid", "pid_start", "host", "session", "task_id", ...}``
  (the writer's process, the session file's name, the MCP task id when the run came from the server);
* then every event of the run, token deltas included (merged in ~50 ms slices, so the panes stream);
* a last line ``{"type": "log_end", ...}`` after ``run_finished`` (or when the writer closed the log
  without a finished run, e.g. a swarm whose task crashed).

A log without its end line whose writer process is gone is an *interrupted* run; the session file
beside it still loads with every completed round (the atomic autosave). Nothing here imports Textual.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from core.methods.catalogue import ensure_event_type
from core.runtime import events as ev
from core.runtime.dispatch import is_delta
from core.sessions.model import record_dict

LOG_SUFFIX = ".events.jsonl"
HEADER_TYPE = "log_header"
END_TYPE = "log_end"
LOG_FORMAT = "swarm-tui-events"
LOG_VERSION = 1
DELTA_SLICE_S = 0.05  # token deltas are merged for this long before they are written
READ_CHUNK = 4 * 1024 * 1024  # the most one read_new() takes in at once
MAX_HEADER_BYTES = 64 * 1024
STALE_FOREIGN_S = 600.0  # a log from another host counts as live while it changed this recently



class LiveState(StrEnum):
    """What an event log says of its run: still running, or interrupted (its writer gone)."""

    RUNNING = "running"
    INTERRUPTED = "interrupted"


def log_path_for(session_path: Path | str) -> Path:
    """``dir/NAME.json`` (or .toml) -> ``dir/NAME.events.jsonl``."""
    path = Path(session_path)
    return path.with_name(path.stem + LOG_SUFFIX)


def is_log_path(path: Path) -> bool:
    return path.name.endswith(LOG_SUFFIX)


# --- the writer's identity ------------------------------------------------------------------


def _process_start(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), to tell a reused pid apart."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    try:
        return int(raw[raw.rindex(")") + 2 :].split()[19])
    except (ValueError, IndexError):
        return None


def _zombie(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return raw[raw.rindex(")") + 2 :][:1] in ("Z", "X")


def process_alive(pid: int, start: int | None = None) -> bool:
    """Is process ``pid`` (started at ``start``, when known) still running on this host?"""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it exists
    except OSError:
        return False
    if _zombie(pid):
        return False
    if start is not None:
        now = _process_start(pid)
        if now is not None and now != start:
            return False  # the pid was reused by another process
    return True


def writer_alive(header: dict[str, Any], path: Path | None = None) -> bool:
    """Is the process that writes this log still running? For a log written on another host (a
    shared folder) the answer is a guess: alive while the log changed in the last few minutes."""
    pid, start = header.get("pid"), header.get("pid_start")
    if header.get("host") not in (None, socket.gethostname()):
        if path is None:
            return True
        try:
            return time.time() - path.stat().st_mtime < STALE_FOREIGN_S
        except OSError:
            return False
    if not isinstance(pid, int) or isinstance(pid, bool):
        return False
    return process_alive(pid, start if isinstance(start, int) and not isinstance(start, bool) else None)


# --- writing --------------------------------------------------------------------------------


def _dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class EventLogWriter:
    """Appends one run's events to its log, one line each, flushed at once. Token deltas of the same
    call are merged for up to DELTA_SLICE_S (any other event writes them first, so order holds).
    Any OSError is raised to the caller (the SessionRecorder keeps it and stops logging)."""

    def __init__(self, path: Path, *, session: Path | None = None, header: dict[str, Any] | None = None,
                 clock: Any = time.monotonic) -> None:
        self.path = Path(path)
        self.session = Path(session) if session is not None else None
        self.extra = dict(header or {})
        self.clock = clock
        self.closed = False
        self.lines = 0
        self._pending: dict[tuple[int, str, str], ev.AgentDelta] = {}
        self._pending_since = 0.0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - held open for the run
        pid = os.getpid()
        head = {
            "type": HEADER_TYPE,
            "format": LOG_FORMAT,
            "version": LOG_VERSION,
            "pid": pid,
            "pid_start": _process_start(pid),
            "host": socket.gethostname(),
            "session": self.session.name if self.session is not None else None,
            "started": time.time(),
            **self.extra,
        }
        self._line(head)

    def _line(self, data: dict[str, Any]) -> None:
        self._handle.write(_dumps(data) + "\n")
        self._handle.flush()
        self.lines += 1

    def _flush_deltas(self) -> None:
        pending, self._pending = self._pending, {}
        for delta in pending.values():
            self._line(delta.to_dict())

    def write(self, event: ev.Event) -> None:
        if self.closed:
            return
        if is_delta(event):
            key = (event.round, event.agent, event.call)
            if not self._pending:
                self._pending_since = self.clock()
            held = self._pending.get(key)
            if held is None:
                self._pending[key] = ev.AgentDelta(
                    round=event.round, agent=event.agent, call=event.call, text=event.text, ts=event.ts
                )
            else:
                held.text += event.text
                held.ts = event.ts
            if self.clock() - self._pending_since >= DELTA_SLICE_S:
                self._flush_deltas()
            return
        self._flush_deltas()
        self._line(record_dict(event))

    def close(self, reason: str = "closed") -> None:
        """Write the end line and close. Idempotent; never raises."""
        if self.closed:
            return
        self.closed = True
        try:
            self._flush_deltas()
            self._line({"type": END_TYPE, "ts": time.time(), "reason": reason})
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                self._handle.close()


# --- reading --------------------------------------------------------------------------------


def read_header(path: Path) -> dict[str, Any] | None:
    """The log's header line, or None when the file is missing or does not start with one."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(MAX_HEADER_BYTES)
    except OSError:
        return None
    try:
        data = json.loads(first)
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("type") == HEADER_TYPE else None


def has_ended(path: Path) -> bool:
    """Does the log end with its end line? (Reads only the file's last few hundred bytes.)"""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 512))
            tail = handle.read()
    except OSError:
        return False
    lines = [line for line in tail.split(b"\n") if line.strip()]
    if not lines:
        return False
    try:
        last = json.loads(lines[-1])
    except ValueError:
        return False
    return isinstance(last, dict) and last.get("type") == END_TYPE


def live_state(session_path: Path) -> str:
    """"running" (a log without its end line, its writer alive), "interrupted" (writer gone), or ""
    (no log, or the run's log ended)."""
    log = log_path_for(session_path)
    if not log.is_file() or has_ended(log):
        return ""
    header = read_header(log)
    if header is None:
        return ""
    return LiveState.RUNNING if writer_alive(header, log) else LiveState.INTERRUPTED


@dataclass
class EventLogReader:
    """Reads a log incrementally: each ``read_new()`` returns the events appended since the last call
    (a line still being written waits for its newline). Bad lines are counted and skipped."""

    path: Path
    offset: int = 0
    header: dict[str, Any] | None = None
    ended: bool = False
    end_reason: str = ""
    bad_lines: int = 0
    _partial: bytes = field(default=b"", repr=False)

    def read_new(self, limit: int = READ_CHUNK) -> list[ev.Event]:
        try:
            with open(self.path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size < self.offset:  # replaced by a new run under the same name: start over
                    self.offset, self._partial, self.header, self.ended = 0, b"", None, False
                handle.seek(self.offset)
                chunk = handle.read(limit)
        except OSError:
            return []
        if not chunk:
            return []
        self.offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()  # b"" when the chunk ended with a newline
        return list(self._parse(lines))

    def _parse(self, lines: Iterable[bytes]) -> Iterable[ev.Event]:
        for raw in lines:
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except ValueError:
                self.bad_lines += 1
                continue
            if not isinstance(data, dict):
                self.bad_lines += 1
                continue
            kind = data.get("type")
            if kind == HEADER_TYPE:
                self.header = data
                continue
            if kind == END_TYPE:
                self.ended = True
                self.end_reason = str(data.get("reason", ""))
                continue
            try:
                ensure_event_type(kind)  # another method's event types are imported when first met
                yield ev.event_from_dict(data)
            except (ev.EventFormatError, TypeError, ValueError):
                self.bad_lines += 1

    def read_all(self) -> list[ev.Event]:
        out: list[ev.Event] = []
        while True:
            batch = self.read_new()
            if not batch and not self._more():
                return out
            out.extend(batch)

    def _more(self) -> bool:
        try:
            return self.path.stat().st_size > self.offset
        except OSError:
            return False

    @property
    def session_path(self) -> Path:
        """The session file this log belongs to (from the header, else by name)."""
        name = (self.header or {}).get("session")
        if isinstance(name, str) and name and "/" not in name and "\\" not in name:
            return self.path.with_name(name)
        return self.path.with_name(self.path.name[: -len(LOG_SUFFIX)] + ".json")


# --- finding runs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LoggedRun:
    log: Path
    session: Path
    header: dict[str, Any]

    @property
    def task_id(self) -> str:
        value = self.header.get("task_id")
        return value if isinstance(value, str) else ""


def logged_runs(directory: Path) -> list[LoggedRun]:
    """Every event log in a folder with a readable header, newest first."""
    out: list[tuple[float, LoggedRun]] = []
    try:
        paths = [p for p in Path(directory).iterdir() if is_log_path(p) and not p.name.startswith(".")]
    except OSError:
        return []
    for path in paths:
        header = read_header(path)
        if header is None:
            continue
        reader = EventLogReader(path, header=header)
        started = header.get("started")
        when = float(started) if isinstance(started, int | float) and not isinstance(started, bool) else 0.0
        out.append((when, LoggedRun(path, reader.session_path, header)))
    out.sort(key=lambda item: (item[0], item[1].log.name), reverse=True)
    return [run for _, run in out]


def find_task(directory: Path, task_id: str) -> LoggedRun | None:
    """The newest run in the folder recorded for this MCP task id."""
    return next((run for run in logged_runs(directory) if run.task_id and run.task_id == task_id), None)
