"""Sessions on disk: atomic save as .json (canonical) or .toml, validated load, listing, and the
recorder that autosaves a live run from its event stream."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import tomli_w

from core.runtime import events as ev
from core.runtime.config import DEFAULT_STRATEGY
from core.runtime.dispatch import EventTable, is_delta
from core.runtime.textsafe import json_safe
from core.sessions.eventlog import EventLogWriter, live_state, log_path_for
from core.sessions.model import Session, SessionFormatError, record_dict, session_from_events

SUFFIXES = (".json", ".toml")
COMPARE_SUFFIX = ".compare.json"  # a comparison's record (core.sessions.compare_record), not a session
# A comparison's summary exported beside its record (core.compose.compare_export: NAME.summary.json): not a
# session either, and no reason to warn about it.
COMPARE_EXPORT_SUFFIX = ".summary.json"
MAX_FILE_BYTES = 64 * 1024 * 1024  # a 10-round, 8-agent session with every embedding is a few MB

# TOML has no null. A dict's None-valued keys are listed under NULL_KEY; a None list item becomes the
# table {NULL_KEY = true}. Real keys that could be mistaken for the marker are escaped with a "~".
NULL_KEY = "__null__"
_ESCAPE = "~"


# --- TOML null encoding ------------------------------------------------------------------------


def _escape_key(key: str) -> str:
    return _ESCAPE + key if key == NULL_KEY or key.startswith(_ESCAPE) else key


def _unescape_key(key: str) -> str:
    return key[1:] if key.startswith(_ESCAPE) else key


def encode_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        nulls: list[str] = []
        for key, item in value.items():
            if item is None:
                nulls.append(_escape_key(key))
            else:
                out[_escape_key(key)] = encode_nulls(item)
        if nulls:
            out[NULL_KEY] = nulls
        return out
    if isinstance(value, list):
        return [{NULL_KEY: True} if item is None else encode_nulls(item) for item in value]
    return value


def decode_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {NULL_KEY} and value[NULL_KEY] is True:
            return None
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == NULL_KEY:
                if not isinstance(item, list) or not all(isinstance(k, str) for k in item):
                    raise SessionFormatError(f"{NULL_KEY} must be a list of key names")
                out.update({_unescape_key(k): None for k in item})
            else:
                out[_unescape_key(key)] = decode_nulls(item)
        return out
    if isinstance(value, list):
        return [decode_nulls(item) for item in value]
    return value


# --- text forms --------------------------------------------------------------------------------


def _dumps(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=False, allow_nan=False)


def session_to_json(session: Session) -> str:
    """Canonical JSON: the top level in schema order, every object inside with sorted keys, one
    event per line, so the same session always gives the same text whichever file it came from.
    (One line per event also keeps saving fast: json's C encoder only runs without indent.)"""
    data = session.to_dict()
    events = data.pop("events")
    head = [f" {json.dumps(key)}: {_dumps(value, 1).replace(chr(10), chr(10) + ' ')}" for key, value in data.items()]
    body = ",\n".join(f"  {_dumps(e)}" for e in events)
    # json escapes C0 controls; json_safe escapes the C1 ones too, so `cat session.json` cannot drive the
    # terminal. The values are unchanged: the file still holds the raw text.
    return json_safe("{\n" + ",\n".join(head) + ',\n "events": [\n' + body + "\n ]\n}\n")


def session_to_toml(session: Session) -> str:
    header = "# swarm-tui session. TOML has no null: keys listed under __null__ are null.\n"
    return header + tomli_w.dumps(encode_nulls(session.to_dict()))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid number here")


def session_from_text(text: str, fmt: str, source: str) -> Session:
    """Parse and validate a session from the text of a .json or .toml file."""
    if not text.strip():
        raise SessionFormatError("the file is empty", source)
    try:
        data = decode_nulls(tomllib.loads(text)) if fmt == "toml" else json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        what = "truncated" if exc.pos >= len(text.rstrip()) else "not valid JSON"
        raise SessionFormatError(f"{what} (line {exc.lineno}, column {exc.colno}: {exc.msg})", source) from None
    except tomllib.TOMLDecodeError as exc:
        raise SessionFormatError(f"not valid TOML ({exc})", source) from None
    except RecursionError:
        raise SessionFormatError("the data is nested too deeply", source) from None
    except SessionFormatError as exc:
        raise exc.with_source(source) from None
    except ValueError as exc:  # NaN/Infinity, integers with thousands of digits
        what = "a number has too many digits" if "digits" in str(exc) else str(exc)
        raise SessionFormatError(f"not valid session data ({what})", source) from None
    return Session.from_dict(data, source)


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise SessionFormatError(f"unsupported file type {suffix or '(none)'!r}: use .json or .toml", str(path))
    return suffix[1:]


# --- save and load -----------------------------------------------------------------------------


def _file_mode(path: Path) -> int:
    """The mode the file should get: the existing file's, else what open() would give (mkstemp
    creates 0600, which would hide shared session folders from other users)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def save_session(session: Session, path: Path) -> Path:
    """Write atomically (write_atomically): a reader or a crash only ever sees the old file or the new one."""
    path = Path(path)
    text = session_to_toml(session) if _format_of(path) == "toml" else session_to_json(session)
    return write_atomically(path, text)


def write_atomically(path: Path, text: str) -> Path:
    """A temp file in the same directory, flushed to disk, then renamed over the target, so a reader (or a
    crash) only ever sees the old file or the new one. Sessions and compare records are written so."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_regular_file(path: Path, source: str) -> bytes:
    """The bytes of a regular file (symlinks followed) of at most MAX_FILE_BYTES. A FIFO, a device or a
    socket named *.json is refused before it is opened, and the file is opened non-blocking and checked
    again, so nothing here can block or read without end (a FIFO, /dev/zero)."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise SessionFormatError(f"{_kind(info.st_mode)}, not a session file: only regular files are read", source)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())  # the file we opened, if it was swapped since the stat above
        if not stat.S_ISREG(info.st_mode):
            raise SessionFormatError(f"{_kind(info.st_mode)}, not a session file: only regular files are read", source)
        if info.st_size > MAX_FILE_BYTES:
            raise SessionFormatError(f"file too large ({info.st_size} bytes; the limit is {MAX_FILE_BYTES})", source)
        raw = handle.read(MAX_FILE_BYTES + 1)  # a file still growing stops at the limit too
    if len(raw) > MAX_FILE_BYTES:
        raise SessionFormatError(f"file too large (more than {MAX_FILE_BYTES} bytes)", source)
    return raw


def load_session(path: Path) -> Session:
    """Read and validate a session file. Every failure is a SessionFormatError with one line."""
    path = Path(path)
    source = str(path)
    try:
        if path.is_dir():
            raise SessionFormatError("is a directory, not a session file", source)
        if not path.exists():
            raise SessionFormatError("no such file", source)
        fmt = _format_of(path)
        raw = read_regular_file(path, source)
    except FileNotFoundError:
        raise SessionFormatError("no such file", source) from None
    except PermissionError:
        raise SessionFormatError("permission denied", source) from None
    except OSError as exc:
        raise SessionFormatError(f"cannot read the file ({exc.strerror or exc})", source) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SessionFormatError("not a text file (invalid UTF-8): corrupt or not a session", source) from None
    if "\x00" in text:
        raise SessionFormatError("holds binary data (NUL bytes): corrupt or not a session", source)
    return session_from_text(text, fmt, source)


# --- names and listing -------------------------------------------------------------------------


def slugify(text: str, max_len: int = 40) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_len:
            break
        slug = candidate
    return slug or (words[0][:max_len] if words else "session")


def readable_filename(session: Session, directory: Path | None = None, suffix: str = ".json") -> str:
    """e.g. 2026-11-21_1032_code_make-palindrome.json (local time). With a directory, a name already
    taken there gets -2, -3, ..."""
    when = datetime.fromtimestamp(session.metadata.ts).strftime("%Y-%m-%d_%H%M")
    stem = f"{when}_{session.domain}_{slugify(session.problem)}"
    name = stem + suffix
    if directory is not None:
        n = 2
        while (Path(directory) / name).exists():
            name = f"{stem}-{n}{suffix}"
            n += 1
    return name


@dataclass(frozen=True)
class SessionSummary:
    path: Path
    created: str  # local time, "YYYY-MM-DD HH:MM"
    problem: str  # first line
    domain: str
    rounds: int  # completed rounds
    outcome: str  # the end reason; "running" / "interrupted" (see live) or "incomplete" for an unfinished run
    tokens: int
    demo: bool
    parent: dict[str, Any] | None
    live: str = ""  # "running": its writer is still at it (follow it); "interrupted": the writer died
    method: str = DEFAULT_STRATEGY  # the strategy the run used


def summarize(session: Session, path: Path) -> SessionSummary:
    lines = session.problem.strip().splitlines()
    live = live_state(path) if session.outcome is None else ""
    return SessionSummary(
        path=path,
        created=datetime.fromtimestamp(session.metadata.ts).strftime("%Y-%m-%d %H:%M"),
        problem=lines[0] if lines else "",
        domain=session.domain,
        rounds=session.completed_rounds,
        outcome=session.outcome.reason if session.outcome is not None else (live or "incomplete"),
        tokens=session.tokens,
        demo=session.demo,
        parent=session.parent,
        live=live,
        method=session.metadata.strategy or DEFAULT_STRATEGY,
    )


class SessionListing(list[SessionSummary]):
    """The sessions found, newest first; ``errors`` holds one error per file that was skipped."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[SessionFormatError] = []


def list_sessions(directory: Path) -> SessionListing:
    """Every readable session in a directory, newest first; unreadable files are skipped and
    reported in ``.errors``. A missing directory is an empty listing. A .toml file next to a .json of
    the same name is taken for the same session and listed once, as the .json."""
    directory = Path(directory)
    found = SessionListing()
    if not directory.is_dir():
        return found
    for path in sorted(directory.iterdir()):
        if path.name.startswith(".") or path.suffix.lower() not in SUFFIXES or not path.is_file():
            continue
        if path.name.endswith(COMPARE_SUFFIX):
            continue  # listed by core.sessions.compare_record.list_records
        if path.name.endswith(COMPARE_EXPORT_SUFFIX):
            continue  # the app's own export of a comparison
        if path.suffix.lower() == ".toml" and path.with_suffix(".json").is_file():
            continue  # the same session twice (a TOML twin or export): list the canonical JSON once
        try:
            found.append(summarize(load_session(path), path))
        except SessionFormatError as exc:
            found.errors.append(exc)
    found.sort(key=lambda s: (s.created, s.path.name), reverse=True)
    return found


# --- the recorder ------------------------------------------------------------------------------

# When the recorder writes the session file (SessionRecorder's ``@SAVE_POINTS.on`` methods): at the run's
# start, at a plan, at each round's end and at the run's end; every other event is only logged.
SAVE_POINTS: EventTable[SessionRecorder] = EventTable()


class SessionRecorder:
    """An event sink that records a run and autosaves it atomically: when the run starts, after the
    Manager's plan, after every round and at the end. A failing write never stops the run: the
    error is kept in ``error`` and the next save tries again.

    It also appends every event (token deltas included) to ``NAME.events.jsonl`` beside the session
    (core.sessions.eventlog), so another process can follow the run live; ``log_header`` adds fields
    to that log's first line (e.g. the MCP task id). A failing log write stops the log, not the run
    (``log_error``). ``close()`` ends the log when the run stopped without a run_finished event."""

    def __init__(
        self,
        directory: Path,
        *,
        path: Path | None = None,
        event_log: bool = True,
        log_header: dict[str, Any] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.requested = Path(path) if path is not None else None
        self.path: Path | None = None
        self.error: str | None = None
        self.saves = 0
        self._events: list[dict[str, Any]] = []
        self.event_log = event_log
        self.log_header = dict(log_header or {})
        self.log: EventLogWriter | None = None
        self.log_error: str | None = None

    @property
    def session(self) -> Session | None:
        if not self._events:
            return None
        return Session(list(self._events))

    @property
    def log_path(self) -> Path | None:
        return self.log.path if self.log is not None else None

    def __call__(self, event: ev.Event) -> None:
        if is_delta(event):
            if self._events and self._events[-1]["type"] != ev.RunFinished.type:
                self._log(event)
            return
        if event.type == ev.RunStarted.type:
            self._events = []
        elif not self._events or self._events[-1]["type"] == ev.RunFinished.type:
            return  # before the run starts or after it ended (e.g. a pause key): not part of the run
        self._events.append(record_dict(event))
        SAVE_POINTS.dispatch(self, event)
        # After the save: a follower that sees run_finished finds the final session file.
        self._log(event)
        if event.type == ev.RunFinished.type:
            self.close("run_finished")

    @SAVE_POINTS.on(ev.RunStarted)
    def _run_started(self, event: ev.RunStarted) -> None:
        self._choose_path()
        self.save()
        self._open_log()

    @SAVE_POINTS.on(ev.ManagerDecided)
    def _decided(self, event: ev.ManagerDecided) -> None:
        if event.plan:
            self.save()

    @SAVE_POINTS.on(ev.RoundFinished)
    def _round_finished(self, event: ev.RoundFinished) -> None:
        self.save()

    @SAVE_POINTS.on(ev.RunFinished)
    def _run_finished(self, event: ev.RunFinished) -> None:
        self.save()

    def _open_log(self) -> None:
        self.close("restarted")
        if not self.event_log or self.path is None:
            return
        try:
            self.log = EventLogWriter(log_path_for(self.path), session=self.path, header=self.log_header)
            self.log_error = None
        except OSError as exc:
            self.log = None
            self.log_error = f"cannot write the event log next to {self.path}: {exc.strerror or exc}"

    def _log(self, event: ev.Event) -> None:
        if self.log is None or self.log.closed:
            return
        try:
            self.log.write(event)
        except (OSError, ValueError, TypeError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.log_error = f"cannot write the event log {self.log.path}: {detail}"
            self.log.close("write failed")

    def close(self, reason: str = "closed") -> None:
        """End the event log (a no-op when it already ended). Idempotent, never raises."""
        if self.log is not None:
            self.log.close(reason)

    def _choose_path(self) -> None:
        if self.requested is not None:
            self.path = self.requested
            return
        try:
            session = session_from_events(self._events)
            self.path = self.directory / readable_filename(session, self.directory)
        except (OSError, SessionFormatError) as exc:
            self.error = f"cannot name the session file: {exc}"

    def save(self) -> bool:
        """Save now; False (and ``error`` set) when it failed."""
        if self.path is None:
            return False
        try:
            save_session(Session(list(self._events)), self.path)
        except (OSError, SessionFormatError, ValueError, TypeError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.error = f"cannot save the session to {self.path}: {detail}"
            return False
        self.error = None
        self.saves += 1
        return True
