"""The results pane (final answer, reason the run ended) and the per-round sparklines."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Label, Markdown, Sparkline, Static

from ..model import RunModel


class ResultsPane(VerticalScroll):
    ALLOW_MAXIMIZE = True

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="pane", can_focus=True)
        self.border_title = "result"
        self._answer: str | None = None
        self._reason = ""
        self._raw = ""  # the final answer as the engine gave it (what "copy" copies)

    def compose(self) -> ComposeResult:
        yield Markdown("", id="answer")
        yield Static("no result yet", id="reason")

    def copy_text(self) -> str:
        return self._raw

    def sync(self, model: RunModel) -> None:
        f = model.finished
        if f is None:
            reason = Content.styled(f"error: {model.error}", "$error") if model.error else Content("no result yet")
            answer = ""
            self.border_title = "result"
        else:
            source = f" (answer from {f.answer_source})" if f.answer_source else ""
            solved = "" if f.solved is None else (" · tests pass" if f.solved else " · tests FAIL")
            reason = Content(f"{f.detail}{source}{solved}")
            self.border_title = Content.assemble(
                "result · ended: ", (f.reason, "bold $success" if f.reason != "error" else "bold $error")
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


class RoundSparks(Vertical):
    """Edges per round and tokens per round."""

    def compose(self) -> ComposeResult:
        yield Label("edges/round", id="edges-label")
        yield Sparkline([], id="edges-spark")
        yield Label("tokens/round", id="tokens-label")
        yield Sparkline([], id="tokens-spark")

    def sync(self, model: RunModel) -> None:
        edges, tokens = model.edges_per_round(), model.tokens_per_round()
        self.query_one("#edges-label", Label).update(f"edges/round  {' '.join(map(str, edges)) or '-'}")
        self.query_one("#tokens-label", Label).update(f"tokens/round {' '.join(map(str, tokens)) or '-'}")
        spark_e, spark_t = self.query_one("#edges-spark", Sparkline), self.query_one("#tokens-spark", Sparkline)
        if list(spark_e.data or []) != edges:
            spark_e.data = edges
        if list(spark_t.data or []) != tokens:
            spark_t.data = tokens
