"""Follow a run another process is writing: the session's event log (core.sessions.eventlog), read
incrementally by offset, through the replay screen's handlers (the same ``apply_event`` a live run
and a replay use), so panes stream, the graph updates and the Manager's decisions appear as they are
written.

When the log ends (the run finished) the screen becomes a normal replay of the saved session. When the
writer dies without ending it, the follower says INTERRUPTED and shows the saved session (every
completed round; the autosave is atomic).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from core.runtime import events as ev
from core.runtime.dispatch import of_kind, without_deltas
from core.sessions.eventlog import EventLogReader, log_path_for, writer_alive
from core.sessions.model import SessionFormatError, session_from_events
from core.sessions.store import load_session

from ..model import RunModel
from .replay import ReplayScreen

POLL_INTERVAL = 0.1  # how often the log is read for new lines
LIVENESS_INTERVAL = 1.0  # how often the writer's process is checked

FOLLOWING = "following"
FINISHED = "finished"
INTERRUPTED = "interrupted"


class FollowScreen(ReplayScreen):
    """A replay screen whose events keep arriving until the run ends."""

    def __init__(self, log_path: Path, *, session_path: Path | None = None) -> None:
        self.reader = EventLogReader(Path(log_path))
        events = self.reader.read_all()
        source = session_path or self.reader.session_path
        super().__init__(events, source=str(source))
        self.session_path = Path(source)
        self.state = FOLLOWING
        self.writer_pid: int | None = None
        self._last_liveness = 0.0
        self._header_pid()

    def _header_pid(self) -> None:
        pid = (self.reader.header or {}).get("pid")
        self.writer_pid = pid if isinstance(pid, int) and not isinstance(pid, bool) else None

    @property
    def following(self) -> bool:
        return self.state == FOLLOWING

    @property
    def task_id(self) -> str:
        value = (self.reader.header or {}).get("task_id")
        return value if isinstance(value, str) else ""

    def on_mount(self) -> None:
        # Textual calls the base classes' on_mount after this one (the replay's seeks to the first
        # phase): start following once they have run.
        self.call_later(self._begin)

    def _begin(self) -> None:
        self.seek(len(self.events))  # a follower starts at the live edge, not at the first phase
        if self.reader.ended:
            self._become_replay(announce=False)
        else:
            self._check_writer(force=True)
        self.set_interval(POLL_INTERVAL, self.poll)

    # --- following ------------------------------------------------------------------------
    def poll(self) -> None:
        """Read what was appended; apply it when the view is at the live edge; check the writer."""
        if not self.following:
            return
        new = self.reader.read_new()
        if new:
            at_edge = self.cursor >= len(self.events)
            self.events.extend(new)
            if at_edge:
                self.seek(len(self.events))
            else:
                self.refresh_all()  # the counter in the params bar grows
        if self.reader.ended:
            self._become_replay(announce=True)
            return
        self._check_writer()

    def _check_writer(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_liveness < LIVENESS_INTERVAL:
            return
        self._last_liveness = now
        header = self.reader.header
        if header is None or writer_alive(header, self.reader.path):
            return
        # One last read: the writer may have ended the log just before it went.
        self.events.extend(self.reader.read_new())
        if self.reader.ended:
            self._become_replay(announce=True)
            return
        self._interrupted()

    def _load_saved(self) -> Any:
        try:
            return load_session(self.session_path)
        except SessionFormatError:
            try:
                return session_from_events(without_deltas(self.events))
            except SessionFormatError:
                return None

    def _show_saved(self, session: Any) -> None:
        """Replace the followed stream (with its token deltas) by the saved session, at its end."""
        if session is not None:
            self.session = session
            self.events = session.replay_events()
            self.tests_recorded = bool(of_kind(self.events, ev.TestRun))
        self.model = RunModel()
        self.model.embeddings_ready = True
        self.cursor = 0
        self.view_round = None
        self.seek(len(self.events))

    def _become_replay(self, *, announce: bool) -> None:
        self.state = FINISHED
        self.refresh_bindings()
        self._show_saved(self._load_saved())
        if announce:
            reason = self.model.finished.reason if self.model.finished is not None else "ended"
            self.notify(f"the run finished ({reason}): this is now a normal replay", timeout=8)

    def _interrupted(self) -> None:
        self.state = INTERRUPTED
        self.refresh_bindings()
        session = self._load_saved()
        self._show_saved(session)
        rounds = session.completed_rounds if session is not None else 0
        who = f" (pid {self.writer_pid})" if self.writer_pid else ""
        self.notify(f"interrupted: the process writing this run{who} is gone; showing the {rounds} "
                    "completed round(s) it saved", severity="warning", timeout=15)

    # --- what the header and the keys say ---------------------------------------------------
    def params_extra(self) -> str:
        if self.state == FOLLOWING:
            behind = self.cursor < len(self.events)
            edge = f" · viewing {self.cursor}/{len(self.events)} (space: live)" if behind else ""
            task = f" · task {self.task_id}" if self.task_id else ""
            return f"[b]FOLLOWING LIVE[/b]{task}{edge}"
        if self.state == INTERRUPTED:
            return "[b]INTERRUPTED[/b] (its writer is gone) · " + super().params_extra()
        return super().params_extra()

    def replay_status(self) -> str:
        if self.state == FOLLOWING:
            return "following live"
        if self.state == INTERRUPTED:
            return "interrupted: the run's process is gone"
        return super().replay_status()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While following, the footer leaves out what only a finished run can do (fork, play speed)."""
        if getattr(self, "state", "") == FOLLOWING and action in ("fork", "speed"):
            return False
        return super().check_action(action, parameters)

    def action_toggle_pause(self) -> None:
        if self.following:  # nothing to play while following: back to the live edge
            self.seek(len(self.events))
            return
        super().action_toggle_pause()

    def action_fork(self) -> None:
        if self.following:
            self.notify("the run is still going: fork once it has finished", severity="warning")
            return
        super().action_fork()

    def _session(self) -> Any:
        if self.following:
            try:
                return session_from_events(without_deltas(self.events))
            except SessionFormatError:
                return None
        return super()._session()


def open_follow(app: Any, session_path: Path) -> FollowScreen:
    """Push a follower for the session at ``session_path`` onto a SwarmApp (the picker's path)."""
    screen = FollowScreen(log_path_for(session_path), session_path=Path(session_path))
    app.swarm_screen = screen
    app._fork_origin = None
    app.push_screen(screen)
    return screen
