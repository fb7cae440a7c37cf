"""A steering script fed into a run: ``--control FILE`` (or ``-`` for stdin, read while the run goes).

One JSON object per line in the schema of core.runtime.steering.parse_action; blank lines and ``#``
comments are skipped. Each action goes to the run's control (RunControl.steer), which applies it at the
barrier before its ``at_round`` (default: the next barrier). A line that cannot be read is one line on
``on_error`` (file, line number, what was expected) and the run goes on without it.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from core.runtime import events as ev
from core.runtime.control import RunControl
from core.runtime.dispatch import EventTable
from core.runtime.steering import SteerAction, SteerError, is_skipped, parse_control_line

STDIN = "-"


class ControlFileError(ValueError):
    """The control file cannot be opened; one line, before the run starts."""


def read_actions(lines: Iterable[str], source: str, on_error: Callable[[str], None]) -> list[SteerAction]:
    """The actions of a whole script; a bad line is reported and left out."""
    actions: list[SteerAction] = []
    for number, line in enumerate(lines, start=1):
        if is_skipped(line):
            continue
        try:
            actions.append(parse_control_line(line, source=source, line_no=number))
        except SteerError as exc:
            on_error(str(exc))
    return actions


def load_control_file(path: str | Path) -> list[str]:
    """The lines of a control file, or ControlFileError naming it (read before the run starts)."""
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ControlFileError(f"cannot read the control file {path}: {why}") from None


def steer_all(control: RunControl, actions: Iterable[SteerAction], on_error: Callable[[str], None]) -> None:
    for action in actions:
        try:
            control.steer(action)
        except SteerError as exc:  # the run has ended
            on_error(str(exc))


def read_stdin_lines(stream: TextIO) -> asyncio.Queue[str]:
    """stdin's lines as they come ("" at the end). A daemon thread does the blocking reads: a worker thread
    of the loop's executor would keep the process waiting for input after the run."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str] = asyncio.Queue()

    def read() -> None:
        try:
            for line in iter(stream.readline, ""):
                loop.call_soon_threadsafe(lines.put_nowait, line)
            loop.call_soon_threadsafe(lines.put_nowait, "")  # end of input
        except (RuntimeError, OSError, ValueError):  # the loop closed (the run is over) or stdin went away
            return

    threading.Thread(target=read, name="control-stdin", daemon=True).start()
    return lines


class ControlScript:
    """``--control FILE|-`` for one run or several (compare and bench give every run the same script).

    core.compose.assembly.open_run attaches each run's control while the run is assembled and detaches it
    when the run ends. A file is read before any run (one that cannot be read fails at once) and every
    attached run gets all its actions; stdin is read while the runs go, each action going to every
    attached run (a run attached later gets what was read before it, too). ``close`` stops the reading."""

    def __init__(self, source: str, on_error: Callable[[str], None], *, stream: TextIO | None = None) -> None:
        self.source = source
        self.on_error = on_error
        self.actions = [] if source == STDIN else read_actions(load_control_file(source), source, on_error)
        self._stream = stream
        self._controls: list[RunControl] = []
        self._reader: asyncio.Task[None] | None = None

    def attach(self, control: RunControl) -> None:
        """Queue the script's actions so far on a run's control, and the ones read from now on."""
        self._controls.append(control)
        steer_all(control, self.actions, self.on_error)
        if self.source == STDIN and self._reader is None:
            self._reader = asyncio.create_task(self._read_stdin())

    def detach(self, control: RunControl) -> None:
        if control in self._controls:
            self._controls.remove(control)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None

    async def _read_stdin(self) -> None:
        lines = read_stdin_lines(self._stream or sys.stdin)
        number = 0
        while line := await lines.get():
            number += 1
            if is_skipped(line):
                continue
            try:
                action = parse_control_line(line, source="stdin", line_no=number)
            except SteerError as exc:
                self.on_error(str(exc))
                continue
            self.actions.append(action)
            for control in list(self._controls):
                steer_all(control, [action], self.on_error)


COUNTS: EventTable[SteerCount] = EventTable()  # SteerCount takes only the steering events


class SteerCount:
    """An event sink counting a run's steering actions, taken and refused (the run summary's line)."""

    def __init__(self) -> None:
        self.taken = 0
        self.refused = 0

    @property
    def total(self) -> int:
        return self.taken + self.refused

    def __call__(self, event: ev.Event) -> None:
        COUNTS.dispatch(self, event)

    @COUNTS.on(ev.UserSteered)
    def _steered(self, event: ev.UserSteered) -> None:
        if event.accepted:
            self.taken += 1
        else:
            self.refused += 1

    def describe(self) -> str:
        return f"{self.taken} action{'s' if self.taken != 1 else ''} taken, {self.refused} refused"
