"""A saved comparison: which sessions ran the same problem, with what endpoint, model and options, and
the summary row of each method.

The record is a small JSON file (``NAME.compare.json``) beside a folder ``NAME/`` that holds each
method's ordinary session (``NAME/METHOD.json``), so every run also opens alone in ``replay``. Session
paths are stored relative to the record and must stay inside its folder: a record from elsewhere cannot
make the app read an arbitrary file.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from core.runtime.textsafe import json_safe
from core.sessions.model import SessionFormatError
from core.sessions.store import COMPARE_SUFFIX, read_regular_file, slugify, write_atomically

RECORD_FORMAT = "swarm-tui-compare"
RECORD_VERSION = 1
RECORD_SUFFIX = COMPARE_SUFFIX
MAX_METHODS = 10  # the compare screen's columns

# The summary row's fields, in the order the headless contract and the exports list them.
ROW_FIELDS = ("method", "answer", "verdict", "calls", "prompt_tokens", "completion_tokens", "wall_s", "session")


class RowState(StrEnum):
    """Where one method of a comparison stands: the row's badge, the record's ``state``."""

    WAITING = "waiting"  # not started (a parallel limit, or stepping one method at a time)
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INCOMPLETE = "incomplete"  # a saved comparison whose run did not finish
    REPLAY = "replay"  # a saved run shown part way through

    @property
    def ended(self) -> bool:
        return self not in (RowState.WAITING, RowState.RUNNING)


@dataclass
class CompareRow:
    """One method's line of the summary: live while it runs, final when it ends."""

    method: str
    answer: str = ""
    verdict: str = "no verdict"
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    session: str = ""  # the method's session file (relative to the record once saved)
    state: RowState = RowState.WAITING
    reason: str = ""  # the run's end reason (answered, budget, max_rounds, ...) or why it failed
    rounds: int = 0  # completed rounds, in the method's own unit
    # Of the tokens, how many are estimates (calls cut off in flight, a server that reports no usage):
    # RunFinished.tokens_estimated. 0 in records saved before it was kept.
    tokens_estimated: int = 0
    # Steering actions taken and refused in this method's run (its session lists them). 0 in older records.
    steered: int = 0
    steer_refused: int = 0
    # Of prompt_tokens, those the server took from its prefix cache; None when it never said (and in records
    # saved before this was kept).
    cached_tokens: int | None = None
    # Seconds a stepped run sat paused waiting for a key: not in wall_s (its working time). 0 in older records.
    paused_s: float = 0.0
    # What the run's calls cost in US dollars (core.llm.prices) and the models with no price; None / [] in
    # records saved before costs were kept.
    cost_usd: float | None = None
    cost_unknown: list[str] = field(default_factory=list)
    cost_local: bool = False  # a call went to a local server (RunFinished.cost_local); False in older records
    # Replies that copied the reply template (RunFinished.replies_copied). 0 in older records.
    replies_copied: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def contract(self) -> dict[str, Any]:
        """The fields of the headless ``compare_summary`` row (issue 26 item 11), then the extras."""
        data = asdict(self)
        return {**{k: data[k] for k in ROW_FIELDS}, **{k: v for k, v in data.items() if k not in ROW_FIELDS}}


@dataclass
class CompareRecord:
    problem: str
    domain: str
    model: str
    base_url: str  # already redacted (core.llm.urls.redact_url)
    demo: bool
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # per method, as the runs used them
    settings: dict[str, Any] = field(default_factory=dict)  # shared run settings (rounds, tau, budgets, ...)
    rows: list[CompareRow] = field(default_factory=list)
    created: float = 0.0
    path: Path | None = None  # where it was read from or saved to

    @property
    def methods(self) -> list[str]:
        return [row.method for row in self.rows]

    def to_json(self) -> str:
        data = {
            "format": RECORD_FORMAT,
            "version": RECORD_VERSION,
            "created": self.created,
            "problem": self.problem,
            "domain": self.domain,
            "model": self.model,
            "base_url": self.base_url,
            "demo": self.demo,
            "methods": self.methods,
            "options": self.options,
            "settings": self.settings,
            "rows": [row.contract() for row in self.rows],
        }
        return json_safe(json.dumps(data, ensure_ascii=False, indent=2, default=str))

    def session_path(self, row: CompareRow) -> Path | None:
        """The row's session file, resolved against the record (None when it has none)."""
        if not row.session:
            return None
        base = self.path.parent if self.path is not None else Path.cwd()
        return base / row.session


def record_paths(directory: Path, problem: str, domain: str, when: float) -> tuple[Path, Path]:
    """(the record file, the folder of its sessions) for a new comparison: a readable, unused name."""
    stamp = datetime.fromtimestamp(when).strftime("%Y-%m-%d_%H%M")
    stem = f"{stamp}_{domain}_compare_{slugify(problem, 30)}"
    name, n = stem, 2
    while (directory / f"{name}{RECORD_SUFFIX}").exists() or (directory / name).exists():
        name, n = f"{stem}-{n}", n + 1
    return directory / f"{name}{RECORD_SUFFIX}", directory / name


def sessions_folder(record_path: Path) -> Path:
    """The folder beside a record that holds its methods' sessions."""
    name = record_path.name
    return record_path.with_name(name.removesuffix(RECORD_SUFFIX) if name.endswith(RECORD_SUFFIX) else record_path.stem)


def save_record(record: CompareRecord, path: Path) -> Path:
    """Atomic, as a session is saved: a reader or a crash sees the old record or the new one."""
    record.path = write_atomically(Path(path), record.to_json())
    return record.path


def is_record_file(path: Path) -> bool:
    return Path(path).name.endswith(RECORD_SUFFIX)


def looks_like_record(path: Path) -> bool:
    """A compare record by name, or a .json whose first bytes name the compare format."""
    if is_record_file(path):
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError:
        return False
    return f'"format": "{RECORD_FORMAT}"'.encode() in head


def load_record(path: Path) -> CompareRecord:
    """Read and check a compare record; every failure is a SessionFormatError with one line."""
    path = Path(path)
    source = str(path)
    try:
        raw = read_regular_file(path, source)
    except FileNotFoundError:
        raise SessionFormatError("no such file", source) from None
    except OSError as exc:
        raise SessionFormatError(f"cannot read the file ({exc.strerror or exc})", source) from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SessionFormatError(f"not a compare record (invalid JSON: {exc})", source) from None
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
        raise SessionFormatError(f"not a compare record (no \"format\": \"{RECORD_FORMAT}\")", source)
    if data.get("version") != RECORD_VERSION:
        raise SessionFormatError(f"compare record version {data.get('version')!r} is not {RECORD_VERSION}", source)
    try:
        rows = [_row(item, path.parent) for item in _list(data, "rows")]
        record = CompareRecord(
            problem=_text(data, "problem"),
            domain=_text(data, "domain"),
            model=_text(data, "model"),
            base_url=_text(data, "base_url"),
            demo=bool(data.get("demo", False)),
            options={str(k): dict(v) for k, v in _dict(data, "options").items() if isinstance(v, dict)},
            settings=_dict(data, "settings"),
            rows=rows,
            created=float(data.get("created") or 0.0),
            path=path,
        )
    except (TypeError, ValueError) as exc:
        raise SessionFormatError(f"compare record: {exc}", source) from None
    if not rows or len(rows) > MAX_METHODS:
        raise SessionFormatError(f"compare record holds {len(rows)} methods (1 to {MAX_METHODS})", source)
    return record


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ValueError(f"{key} must be a list")
    return value


def _dict(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{key} must be a table")
    return value


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"{key} must be text")
    return value


def _state(value: Any) -> RowState:
    if value not in RowState._value2member_map_:
        raise ValueError(f"a row's state must be one of {', '.join(RowState)}, got {str(value)[:40]!r}")
    return RowState(value)


def _row(item: Any, base: Path) -> CompareRow:
    if not isinstance(item, dict) or not isinstance(item.get("method"), str):
        raise ValueError("every row needs a method name")
    session = item.get("session") or ""
    if not isinstance(session, str):
        raise ValueError("a row's session must be a path")
    if session:
        target = (base / session).resolve()
        if Path(session).is_absolute() or not target.is_relative_to(base.resolve()):
            raise ValueError(f"session {session!r} of {item['method']} lies outside the record's folder")
    return CompareRow(
        method=item["method"],
        answer=str(item.get("answer", "")),
        verdict=str(item.get("verdict", "no verdict")),
        calls=int(item.get("calls", 0)),
        prompt_tokens=int(item.get("prompt_tokens", 0)),
        completion_tokens=int(item.get("completion_tokens", 0)),
        wall_s=float(item.get("wall_s", 0.0)),
        session=session,
        state=_state(item.get("state", "done")),
        reason=str(item.get("reason", "")),
        rounds=int(item.get("rounds", 0)),
        tokens_estimated=int(item.get("tokens_estimated", 0)),
        steered=int(item.get("steered", 0)),
        steer_refused=int(item.get("steer_refused", 0)),
        cached_tokens=int(item["cached_tokens"]) if isinstance(item.get("cached_tokens"), int) else None,
        paused_s=float(item.get("paused_s", 0.0)),
        cost_usd=float(item["cost_usd"]) if isinstance(item.get("cost_usd"), int | float) else None,
        cost_unknown=[str(m) for m in item.get("cost_unknown") or [] if isinstance(m, str)],
        cost_local=item.get("cost_local") is True,
        replies_copied=int(item.get("replies_copied", 0)),
    )


@dataclass(frozen=True)
class CompareSummary:
    """A compare record as the session lists show it."""

    path: Path
    created: str
    problem: str
    domain: str
    methods: list[str]
    demo: bool


def list_records(directory: Path) -> tuple[list[CompareSummary], list[SessionFormatError]]:
    """Every readable compare record in a directory, newest first, and the errors of those skipped."""
    found: list[CompareSummary] = []
    errors: list[SessionFormatError] = []
    directory = Path(directory)
    if not directory.is_dir():
        return found, errors
    for path in sorted(directory.glob(f"*{RECORD_SUFFIX}")):
        if path.name.startswith(".") or not path.is_file():
            continue
        try:
            record = load_record(path)
        except SessionFormatError as exc:
            errors.append(exc)
            continue
        lines = record.problem.strip().splitlines()
        found.append(CompareSummary(
            path=path,
            created=datetime.fromtimestamp(record.created).strftime("%Y-%m-%d %H:%M"),
            problem=lines[0] if lines else "",
            domain=record.domain,
            methods=record.methods,
            demo=record.demo,
        ))
    found.sort(key=lambda s: (s.created, s.path.name), reverse=True)
    return found, errors
