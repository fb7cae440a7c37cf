"""The results pane (final answer, reason the run ended) and the per-round sparklines."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Label, Markdown, Static

from core.demo.played import TESTS_LABEL, demo_answer_note, demo_banner
from core.runtime import events as ev
from core.runtime.outcome import EndReason

from ..model import RunModel, unit_mark


def test_runs_content(runs: list[ev.TestRun], tests: str, finished: ev.RunFinished | None,
                      demo_played: str = "", unit: str = "round") -> Content:
    """Every sandboxed test run (round, outcome, failing test, duration), then the run's solved flag.
    ``demo_played``: the demo played its own problem, so the tests are that problem's, and say so."""
    if not runs:
        return Content(f"tests: on — the first run comes after {unit} 1" if tests == "on" else "")
    title = f"test runs (sandbox) — {TESTS_LABEL}, not yours" if demo_played else "test runs (sandbox)"
    lines = [Content.styled(title, "bold $warning" if demo_played else "bold")]
    for run in runs:
        mark, style = ("✓", "$success") if run.passed else ("✗", "$error")
        failing = " ".join(run.failing_test.split())
        if len(failing) > 60:
            failing = failing[:59] + "…"
        lines.append(Content.assemble(
            f"{unit_mark(unit, run.round)} ", (f"{mark} {run.outcome}", f"bold {style}"),
            f"  {failing}" if failing else "", (f"  {run.duration_s:.2f}s", "$text-muted"),
        ))
    if finished is not None and finished.solved is not None:
        verdict = ("solved: yes — the last test run passed", "bold $success") if finished.solved else (
            "solved: NO — the tests did not pass", "bold $error")
        if demo_played:  # a verdict on the demo's problem, never on the user's
            verdict = (f"the demo's own problem {verdict[0]}", verdict[1])
        lines.append(Content.assemble(verdict))
    return Content("\n").join(lines)


class ResultsPane(VerticalScroll):
    ALLOW_MAXIMIZE = True

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="pane", can_focus=True)
        self.border_title = "result"
        self._answer: str | None = None
        self._reason = ""
        self._raw = ""  # the final answer as the engine gave it (what "copy" copies)
        self._tests: str | None = None
        self._played: str | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="demo-played", markup=False)
        yield Static("", id="tests")
        yield Markdown("", id="answer")
        yield Static("no result yet", id="reason")

    def copy_text(self) -> str:
        return self._raw

    def sync(self, model: RunModel, tests: str = "") -> None:
        """``tests``: "on" / "off" when the screen knows whether code tests run after each round."""
        f = model.finished
        note = (demo_answer_note(model.demo_played) if f is not None else demo_banner(model.demo_played)) \
            if model.demo_played else ""
        if note != self._played:
            self._played = note
            played = self.query_one("#demo-played", Static)
            played.update(Content.styled(note, "bold $warning"))
            played.display = bool(note)
        unit = model.method_info.unit if model.method_info is not None else "round"
        runs = test_runs_content(model.test_runs, tests, f, model.demo_played, unit)
        if str(runs) != self._tests:
            self._tests = str(runs)
            widget = self.query_one("#tests", Static)
            widget.update(runs)
            widget.display = bool(str(runs))
        if f is None:
            reason = Content.styled(f"error: {model.error}", "$error") if model.error else Content("no result yet")
            answer = ""
            self.border_title = "result"
        else:
            source = f" (answer from {f.answer_source})" if f.answer_source else ""
            solved = "" if f.solved is None else (" · tests pass" if f.solved else " · tests FAIL")
            if solved and model.demo_played:
                solved += " (the demo's own problem)"
            reason = Content(f"{f.detail}{source}{solved}")
            self.border_title = Content.assemble(
                "result · ended: ", (f.reason, "bold $success" if f.reason != EndReason.ERROR else "bold $error")
            )
            answer = as_markdown(f.final_answer, model.domain) or "*(no answer)*"
            self._raw = f.final_answer
        if str(reason) != self._reason:
            self._reason = str(reason)
            self.query_one("#reason", Static).update(reason)
        if answer != self._answer:
            self._answer = answer
            self.query_one("#answer", Markdown).update(answer)


def as_markdown(answer: str, domain: str) -> str:
    """Code answers without a fence get one, so they are highlighted."""
    text = answer.strip()
    if domain == "code" and text and "```" not in text:
        return f"```python\n{text}\n```"
    return text


BARS = "▁▂▃▄▅▆▇█"


def bar_cells(data: list[int], width: int) -> list[tuple[str, bool]]:
    """One block per value, scaled from 0 (not from the smallest value: 4 edges next to 12 is a third
    of a bar, not nothing); (bar character, value is zero) per cell. Each value is as wide as the width
    allows, at most 6 cells."""
    if not data or width <= 0:
        return []
    top = max(data)
    cell = max(1, min(6, width // len(data)))
    out: list[tuple[str, bool]] = []
    for value in data[-(width // cell or 1):]:
        if value <= 0 or top <= 0:
            out += [("▁", True)] * cell
        else:
            out += [(BARS[max(1, min(len(BARS), round(value / top * len(BARS)))) - 1], False)] * cell
    return out


class Bars(Static):
    """A one-line bar chart of ``data`` from 0 (Textual's Sparkline scales from its minimum)."""

    DEFAULT_CSS = "Bars { height: 1; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.data: list[int] = []

    def set_data(self, data: list[int]) -> None:
        if data != self.data:
            self.data = list(data)
            self.refresh()

    def render(self) -> Content:
        cells = bar_cells(self.data, self.content_region.width or 40)
        return Content.assemble(*((char, "$text-muted" if zero else "$primary") for char, zero in cells))


class RoundSparks(Vertical):
    """Edges per round and tokens per round (a round in progress once it has a value); no edges for a run
    of one agent (class -no-edges)."""

    DEFAULT_CSS = "RoundSparks.-no-edges > #edges-label, RoundSparks.-no-edges > #edges-spark { display: none; }"

    def compose(self) -> ComposeResult:
        yield Label("edges/round", id="edges-label")
        yield Bars(id="edges-spark")
        yield Label("tokens/round", id="tokens-label")
        yield Bars(id="tokens-spark")

    def sync(self, model: RunModel) -> None:
        edges, tokens = model.edges_per_round(), model.tokens_per_round()
        unit = model.unit  # per round, step or turn: the method's own word
        width = len("tokens/") + len(unit) + 1
        for name, data in (("edges", edges), ("tokens", tokens)):
            values = " ".join(map(str, data)) or "-"
            self.query_one(f"#{name}-label", Label).update(f"{name}/{unit}".ljust(width) + values)
        self.query_one("#edges-spark", Bars).set_data(edges)
        self.query_one("#tokens-spark", Bars).set_data(tokens)
