"""A comparison as one HTML page: the summary table, then the methods side by side, each column its own
session's steps (core.sessions.html), moved together by one step control. A method whose session file is
missing or unreadable keeps its summary row and says why in its column."""

from __future__ import annotations

import re

from core.compose.compare import estimated_note, summary_rows
from core.llm.urls import redact_url
from core.methods.registry import format_options
from core.runtime.config import DomainName
from core.sessions.compare_record import CompareRecord
from core.sessions.html.page import document, esc, removed_toggle, stepper
from core.sessions.html.session import meta_rows, steps, unit_of
from core.sessions.html.text import code_block, rich_text
from core.sessions.model import Session, SessionFormatError
from core.sessions.store import load_session


def _summary(record: CompareRecord) -> str:
    head = ("<tr><th>method</th><th>answer</th><th>verdict</th><th class=num>calls</th><th class=num>prompt</th>"
            "<th class=num>completion</th><th class=num>total</th><th class=num>wall s</th><th class=num>Δ tokens</th>"
            "<th class=num>Δ wall</th><th>end</th></tr>")
    body = []
    for row in summary_rows(record.rows):
        answer = " ".join(re.sub(r"```[\w+-]*", " ", str(row["answer"])).split())  # a cell: no fences
        answer = answer if len(answer) <= 80 else answer[:79] + "…"
        mark = row["tokens_mark"]
        body.append(
            f"<tr><td><a href=\"#col-{esc(row['method'])}\">{esc(row['method'])}</a></td><td>{esc(answer) or '—'}</td>"
            f"<td>{esc(row['verdict'])}</td><td class=num>{row['calls']}</td>"
            f"<td class=num>{mark}{row['prompt_tokens']}</td><td class=num>{mark}{row['completion_tokens']}</td>"
            f"<td class=num>{mark}{row['total_tokens']}</td><td class=num>{row['wall_s']:.1f}</td>"
            f"<td class=num>{esc(row['tokens_vs_first'])}</td><td class=num>{esc(row['wall_vs_first'])}</td>"
            f"<td>{esc(row['reason'] or row['state'])}</td></tr>"
        )
    note = estimated_note(record.rows)
    foot = f'<p class="legend">{esc(note)}</p>' if note else ""
    return (f'<h2>Summary</h2><div class="tablewrap"><table class="summary">{head}{"".join(body)}</table></div>{foot}'
            '<p class="legend">Differences are to the first method.</p>')


def _column(record: CompareRecord, index: int) -> tuple[str, int]:
    """One method's column and how many steps it has."""
    row = record.rows[index]
    path = record.session_path(row)
    options = format_options(record.options.get(row.method, {})) or "none"
    head = (f'<h2 id="col-{esc(row.method)}">{esc(row.method)}</h2>'
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
        answer = rich_text(session.outcome.final_answer, code_default=lang)
        head += f"<details><summary>answer</summary>{answer}</details>"
    sections = steps(session, prefix=f"c{index}-", compact=True)
    return f'<div class="column" data-method="{esc(row.method)}">{head}{"".join(sections)}</div>', len(sections)


def compare_page(record: CompareRecord) -> str:
    title = record.problem.strip().splitlines()[0] if record.problem.strip() else "comparison"
    badges = '<span class="badge demo">DEMO: a scripted server answered</span>' if record.demo else ""
    settings = ", ".join(f"{k} {v}" for k, v in record.settings.items()) or "defaults"
    top = (f'<header><p>{badges}<span class="badge">swarm-tui comparison</span></p><h1>{esc(title)}</h1>'
           + meta_rows([("model", esc(record.model)), ("endpoint", esc(redact_url(record.base_url))),
                        ("domain", esc(record.domain)), ("settings", esc(settings)),
                        ("methods", esc(", ".join(record.methods)))])
           + f"<details><summary>the problem</summary>{code_block(record.problem, '')}</details></header>")
    columns = [_column(record, i) for i in range(len(record.rows))]
    units = {unit_of(row.method) for row in record.rows}
    unit = units.pop() if len(units) == 1 else "step"
    most = max((n for _, n in columns), default=0)
    body = top + _summary(record) + stepper(unit) + removed_toggle()
    body += '<div class="columns">' + "".join(html for html, _ in columns) + "</div>"
    if most == 0:
        body += '<p class="mute">No method recorded a step.</p>'
    return document(f"swarm-tui · compare · {title[:80]}", body)
