"""A comparison as one HTML page: the summary table, then the methods side by side, each column its own
session's steps (core.sessions.html), moved together by one step control. A method whose session file is
missing or unreadable keeps its summary row and says why in its column."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from core.compose.compare import estimated_note, summary_rows
from core.llm.urls import redact_url
from core.methods.registry import format_options
from core.runtime.config import DomainName
from core.sessions.compare_record import CompareRecord
from core.sessions.html.beside import write_pages
from core.sessions.html.math import math_text
from core.sessions.html.page import document, esc, removed_toggle, stepper
from core.sessions.html.session import meta_rows, steps, unit_of
from core.sessions.html.text import code_block, rich_text
from core.sessions.model import Session, SessionFormatError
from core.sessions.store import load_session

COLUMNS = ("method", "answer", "verdict", "calls", "prompt", "completion", "total", "wall s", "Δ tokens", "Δ wall",
           "end")
NUMERIC = frozenset({"calls", "prompt", "completion", "total", "wall s", "Δ tokens", "Δ wall"})


def _cells(values: list[str]) -> str:
    """A summary row; each cell names its column (data-label), which a phone shows beside it as a card."""
    return "<tr>" + "".join(f'<td{" class=num" if name in NUMERIC else ""} data-label="{esc(name)}">{value}</td>'
                            for name, value in zip(COLUMNS, values, strict=True)) + "</tr>"


def _summary(record: CompareRecord) -> str:
    head = "<tr>" + "".join(f"<th{' class=num' if c in NUMERIC else ''}>{esc(c)}</th>" for c in COLUMNS) + "</tr>"
    body = []
    for row in summary_rows(record.rows):
        answer = " ".join(re.sub(r"```[\w+-]*", " ", str(row["answer"])).split())  # a cell: no fences
        answer = answer if len(answer) <= 80 else answer[:79] + "…"
        mark = row["tokens_mark"]
        body.append(_cells([
            f"<a href=\"#col-{esc(row['method'])}\">{esc(row['method'])}</a>", math_text(answer) or "—",
            esc(row["verdict"]), str(row["calls"]), f"{mark}{row['prompt_tokens']}",
            f"{mark}{row['completion_tokens']}", f"{mark}{row['total_tokens']}", f"{row['wall_s']:.1f}",
            esc(row["tokens_vs_first"]), esc(row["wall_vs_first"]), esc(row["reason"] or row["state"])]))
    note = estimated_note(record.rows)
    foot = f'<p class="legend">{esc(note)}</p>' if note else ""
    return (f'<h2>Summary</h2><div class="tablewrap"><table class="summary">{head}{"".join(body)}</table></div>{foot}'
            '<p class="legend">Differences are to the first method.</p>')


def _column(record: CompareRecord, index: int, links: Mapping[str, str]) -> tuple[str, int]:
    """One method's column and how many steps it has; ``links``: method -> its own session page."""
    row = record.rows[index]
    path = record.session_path(row)
    options = format_options(record.options.get(row.method, {})) or "none"
    own = (f' <a class="own" href="{esc(links[row.method])}" title="this method\'s run on a page of its own">its '
           "page ↗</a>") if row.method in links else ""
    head = (f'<h2 id="col-{esc(row.method)}">{esc(row.method)}{own}</h2>'
            + meta_rows([("options", esc(options)), ("verdict", esc(row.verdict)),
                         ("end", esc(row.reason or row.state))]))
    session: Session | None = None
    problem = ""
    if path is None:
        problem = "no session was saved for this method"
    else:
        try:
            session = load_session(path)
        except SessionFormatError as exc:
            problem = f"its session cannot be read: {exc}"
    if session is None:
        return f'<div class="column">{head}<p class="bad">{esc(problem)}</p></div>', 0
    if session.outcome is not None and session.outcome.final_answer:
        lang = "python" if session.domain == DomainName.CODE else ""
        answer = rich_text(session.outcome.final_answer, code_default=lang, answer=True)
        head += f"<details><summary>answer</summary>{answer}</details>"
    sections = steps(session, prefix=f"{row.method}-", compact=True)
    return f'<div class="column" data-method="{esc(row.method)}">{head}{"".join(sections)}</div>', len(sections)


def write_method_pages(record: CompareRecord, out: Path | None) -> dict[str, str]:
    """Each method's session page, written beside its session (core.sessions.html.beside); method -> the link to
    it from a page written at ``out`` (None: beside the record)."""
    sessions = {row.method: p for row in record.rows if (p := record.session_path(row)) is not None}
    pages = write_pages(sessions.values())
    where = out.parent if out is not None else record.path.parent if record.path is not None else Path.cwd()
    return {method: Path(os.path.relpath(pages[p], where)).as_posix() for method, p in sessions.items() if p in pages}


def export_page(record: CompareRecord, out: Path | None = None) -> str:
    """The comparison's page to be written at ``out``, each method's own page written and linked."""
    return compare_page(record, write_method_pages(record, out))


def compare_page(record: CompareRecord, links: Mapping[str, str] | None = None) -> str:
    """The page; ``links``: method -> its own session page (write_method_pages), linked from its column."""
    title = record.problem.strip().splitlines()[0] if record.problem.strip() else "comparison"
    badges = '<span class="badge demo">DEMO: a scripted server answered</span>' if record.demo else ""
    settings = ", ".join(f"{k} {v}" for k, v in record.settings.items()) or "defaults"
    top = (f'<header><p>{badges}<span class="badge">swarm-tui comparison</span></p><h1>{math_text(title)}</h1>'
           + meta_rows([("model", esc(record.model)), ("endpoint", esc(redact_url(record.base_url))),
                        ("domain", esc(record.domain)), ("settings", esc(settings)),
                        ("methods", esc(", ".join(record.methods)))])
           + f"<details><summary>the problem</summary>{code_block(record.problem, '')}</details></header>")
    columns = [_column(record, i, links or {}) for i in range(len(record.rows))]
    units = {unit_of(row.method) for row in record.rows}
    unit = units.pop() if len(units) == 1 else "step"
    most = max((n for _, n in columns), default=0)
    body = top + _summary(record) + stepper(unit) + removed_toggle()
    body += '<div class="columns">' + "".join(html for html, _ in columns) + "</div>"
    if most == 0:
        body += '<p class="mute">No method recorded a step.</p>'
    return document(f"swarm-tui · compare · {title[:80]}", body)
