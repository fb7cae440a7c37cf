"""``swarm-tui compare --headless``: every method's progress on stderr (each line tagged with its method)
and the summary table on stdout; with --json every event of every run as a JSON line carrying
``"method"`` (interleaved as they happen), then one ``compare_summary`` line. No Textual import here."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import TextIO

from core.compose.compare import ComparePlan, Comparison, answer_gist, estimated_note, summary_rows
from core.compose.control_feed import ControlFileError, ControlScript
from core.compose.plan import BackendChoice, embedder_for
from core.compose.runner import open_backend
from core.demo.played import demo_banner
from core.llm.client import EndpointError
from core.runtime import events as ev
from core.runtime.dispatch import EventTable
from core.runtime.textsafe import json_safe, one_line
from core.sessions.compare_record import CompareRow, RowState

from .headless import EXIT_CANCELLED, EXIT_FAILED, EXIT_USAGE, JsonLinesWriter, ProgressPrinter, say, write_or_silence

SUMMARY_HEADERS = ("method", "answer", "verdict", "calls", "prompt", "completion", "total", "wall s", "tokens", "wall",
                   "prompt cache", "cost")


class TaggedLines:
    """A text stream that starts every line with ``[method] ``: parallel runs' progress stays readable."""

    def __init__(self, out: TextIO, tag: str) -> None:
        self.out = out
        self.prefix = f"[{tag}] "
        self._at_line_start = True

    def write(self, text: str) -> int:
        parts = []
        for line in text.splitlines(keepends=True):
            if self._at_line_start and line.strip():
                parts.append(self.prefix)
            parts.append(line)
            self._at_line_start = line.endswith("\n")
        return self.out.write("".join(parts))

    def flush(self) -> None:
        self.out.flush()

    def fileno(self) -> int:
        return self.out.fileno()


SAYS: EventTable[DemoTruth] = EventTable()


class DemoTruth:
    """With --json there is no progress to carry the demo's warning (the demo played its own scenario, not
    the problem asked): this sink says it on stderr."""

    def __init__(self, method: str) -> None:
        self.method = method

    def __call__(self, event: ev.Event) -> None:
        SAYS.dispatch(self, event)

    @SAYS.on(ev.RunStarted)
    def _started(self, event: ev.RunStarted) -> None:
        if event.demo_played:
            say(f"[{self.method}] {demo_banner(event.demo_played)}")


def format_summary(rows: list[CompareRow]) -> str:
    """The summary table as plain text: one line per method, the differences to the first column; "~" marks
    tokens that hold estimates, explained under the table."""
    steered = any(r.steered or r.steer_refused for r in rows)  # a steered comparison: one more column
    headers = (*SUMMARY_HEADERS, "steered") if steered else SUMMARY_HEADERS
    cells = [
        (
            r["method"], one_line(answer_gist(r["answer"]), 32) or "—", one_line(r["verdict"], 28), str(r["calls"]),
            *(f"{r['tokens_mark']}{r[key]}" for key in ("prompt_tokens", "completion_tokens", "total_tokens")),
            f"{r['wall_s']:.1f}", r["tokens_vs_first"], r["wall_vs_first"], r["cached"], r["cost"],
            *([f"{r['steered']}" + (f" (+{r['steer_refused']} refused)" if r["steer_refused"] else "")]
              if steered else []),
        )
        for r in summary_rows(rows)
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]

    def line(values: tuple[str, ...]) -> str:
        pairs = enumerate(zip(values, widths, strict=True))
        return "  ".join(v.ljust(w) if i < 3 else v.rjust(w) for i, (v, w) in pairs).rstrip()

    note = estimated_note(rows)
    return "\n".join([line(headers), line(tuple("-" * w for w in widths)), *(line(c) for c in cells),
                      *([note] if note else [])])


async def _compare(plan: ComparePlan, demo: bool, json_lines: bool, save: Path | None, control: str | None) -> int:
    settings = plan.settings
    try:  # a control file is read before the runs: one that cannot be read fails at once
        script = ControlScript(control, lambda line: say(f"swarm-tui: {line}")) if control else None
    except ControlFileError as exc:
        say(f"swarm-tui: {exc}")
        return EXIT_USAGE
    embedder = embedder_for(settings)
    try:
        backend = await open_backend(settings, BackendChoice(demo=demo, on_status=lambda text: say(f"  {text}")))
    except EndpointError as exc:
        say(f"swarm-tui: {exc}")
        return EXIT_FAILED
    writers: list[JsonLinesWriter] = []

    def sinks_for(method: str) -> list[ev.EventSink]:
        if json_lines:
            writer = JsonLinesWriter(sys.stdout, extra={"method": method})
            writers.append(writer)
            return [writer, DemoTruth(method), embedder.warm_up_on_first_reply()]
        return [ProgressPrinter(TaggedLines(sys.stderr, method)), embedder.warm_up_on_first_reply()]  # type: ignore[arg-type]

    def ended(row: CompareRow) -> None:
        if row.state == RowState.FAILED:
            say(f"[{row.method}] failed: {row.reason}")

    # Every method's run gets the same script: the comparison is of the same steered run.
    comparison = Comparison(plan, backend, embedder, sessions_dir=Path(settings.sessions_dir), record_path=save,
                            sinks_for=sinks_for, on_row=ended, steering=script)
    for writer in writers:
        writer.on_closed = comparison.cancel
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, comparison.cancel)
        loop.add_signal_handler(signal.SIGTERM, comparison.cancel)
    except (NotImplementedError, RuntimeError):  # not on the main thread, or not supported
        pass
    say(f"comparing {', '.join(plan.methods)} on one problem ({plan.parallel or len(plan.methods)} at a time)"
        + (" — DEMO: scripted model server, no real model is answering" if demo else ""))
    try:
        record = await comparison.run()
    finally:
        if script is not None:
            script.close()
        await backend.close()
    rows = record.rows
    if json_lines:
        summary = {"type": "compare_summary", "rows": [row.contract() for row in rows],
                   "record": str(comparison.record_path)}
        write_or_silence(sys.stdout, json_safe(json.dumps(summary, ensure_ascii=False)) + "\n")
    else:
        write_or_silence(sys.stdout, format_summary(rows) + "\n")
    if comparison.save_error:
        say(f"swarm-tui: {comparison.save_error}")
    else:
        say(f"comparison saved: {comparison.record_path}")
    if comparison.cancelled:
        return EXIT_CANCELLED
    failed = comparison.failed
    if failed:
        say(f"swarm-tui: {len(failed)} of {len(rows)} methods failed: {', '.join(r.method for r in failed)}")
        return EXIT_FAILED
    return 0


def run_compare_headless(
    plan: ComparePlan, *, demo: bool, json_lines: bool, save: Path | None, control: str | None = None
) -> int:
    return asyncio.run(_compare(plan, demo, json_lines, save, control))
