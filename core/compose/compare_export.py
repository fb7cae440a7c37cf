"""A comparison as Markdown, JSON, CSV and HTML: the problem, the endpoint (already redacted in the record), the
model, the shared settings, each method's options and the summary rows with their differences to the first
method. What a person pastes into an issue or loads into a spreadsheet; the HTML page (core.compose.compare_html)
also holds every method's steps side by side."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from core.compose.compare import estimated_note, summary_rows
from core.compose.compare_html import compare_page, export_page
from core.runtime.textsafe import json_safe
from core.sessions.compare_record import CompareRecord, sessions_folder

EXPORT_FORMATS = ("md", "json", "csv", "html")
CSV_COLUMNS = ("method", "state", "answer", "verdict", "calls", "prompt_tokens", "completion_tokens", "total_tokens",
               "tokens_estimated", "cached_tokens", "cost_usd", "wall_s", "tokens_vs_first", "wall_vs_first", "reason",
               "session")


def _cell(text: object) -> str:
    """A Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def to_markdown(record: CompareRecord) -> str:
    lines = [
        "# Comparison" + (" (demo: scripted server)" if record.demo else ""),
        "",
        f"- **model**: {record.model} at {record.base_url}",
        f"- **domain**: {record.domain}",
        "- **settings**: " + ", ".join(f"{k} {v}" for k, v in record.settings.items()),
        "",
        "## Problem",
        "",
        *(f"> {line}" for line in record.problem.splitlines() or [""]),
        "",
        "## Summary",
        "",
        "| method | answer | verdict | calls | prompt | completion | total | wall s | Δ tokens | Δ wall "
        "| prompt cache | cost |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for row in summary_rows(record.rows):
        answer = row["answer"] if len(row["answer"]) <= 60 else row["answer"][:59] + "…"
        mark = row["tokens_mark"]
        lines.append(
            f"| {_cell(row['method'])} | {_cell(answer) or '—'} | {_cell(row['verdict'])} | {row['calls']} | "
            f"{mark}{row['prompt_tokens']} | {mark}{row['completion_tokens']} | {mark}{row['total_tokens']} | "
            f"{row['wall_s']:.1f} | {row['tokens_vs_first']} | {row['wall_vs_first']} | {row['cached']} | "
            f"{_cell(row['cost'])} |"
        )
    note = estimated_note(record.rows)
    lines += ["", *([_cell(note), ""] if note else []), "Differences are to the first method. Options per method:", ""]
    for method, options in record.options.items():
        shown = ", ".join(f"{k}={v}" for k, v in options.items()) or "(none)"
        lines.append(f"- **{method}**: {_cell(shown)}")
    return "\n".join(lines) + "\n"


def to_json(record: CompareRecord) -> str:
    data = json.loads(record.to_json())
    data["summary"] = summary_rows(record.rows)
    return json_safe(json.dumps(data, ensure_ascii=False, indent=2))


def to_csv(record: CompareRecord) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in summary_rows(record.rows):
        writer.writerow(row)
    return out.getvalue()


WRITERS = {"md": to_markdown, "json": to_json, "csv": to_csv, "html": compare_page}


def export_paths(record: CompareRecord, directory: Path) -> dict[str, Path]:
    """Where each format goes: beside the record, named after it (``NAME.summary.md`` …; the page, which holds
    every method's steps too, ``NAME.html``)."""
    stem = sessions_folder(record.path).name if record.path is not None else "comparison"
    paths = {fmt: Path(directory) / f"{stem}.summary.{fmt}" for fmt in EXPORT_FORMATS}
    paths["html"] = Path(directory) / f"{stem}.html"
    return paths


def export_record(record: CompareRecord, fmt: str, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = export_page(record, path) if fmt == "html" else WRITERS[fmt](record)  # the page links each method's
    path.write_text(text, encoding="utf-8")
    return path
