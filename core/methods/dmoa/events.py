"""DMoA's two events, on the one event stream (sessions, replay, ``--json`` carry them as they are).

* ``DmoaRouted`` — step i's routing decision, before the routed agents run: the logits z_i over the
  pool, p = softmax(z_i / tau), k_i and K, the selected agents and their alpha (eq. 3-4, 7, 9-12), and
  the context vector X_i the router read.
* ``DmoaStepDone`` — after the step: the summarizer's tag and text and, on dense (training / TTT)
  steps, each agent's predictive entropy (eq. 13), its confidence C_i and the ranking loss (eq. 14).

Both can describe themselves in a few plain lines (``describe()``), which the headless printer and the
Markdown export print for any event that has it. ``steps_from_events`` folds a stream into one record
per step for the TUI's router view.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

from core.runtime import events as ev

# DMoA's call labels (AgentStarted/AgentFinished ``call``; the scripted server dispatches on them).
CALL_STEP = "dmoa-step"  # a pool agent's contribution to a step
CALL_SUMMARY = "dmoa-summarize"  # the Summarizer's [FINAL] / [CONTINUE]
CALL_SELECT = "dmoa-select"  # the LLM selector's choice (router = llm)
CALLS = (CALL_STEP, CALL_SUMMARY, CALL_SELECT)


@ev._register
@dataclass(kw_only=True)
class DmoaRouted(ev.Event):
    type: ClassVar[str] = "dmoa_routed"
    round: int  # the step i
    router: str  # "gru" | "llm" | "semantic"
    names: list[str]  # the pool, in the order of the logits
    logits: list[float]  # z_i (llm: the Selector's weights, normalised)
    probs: list[float]  # softmax(z_i / tau) (llm: the same normalised weights)
    tau: float
    k: int  # k_i
    k_max: int  # K
    selected: list[str]  # KeepTopK(z_i, k_i), strongest first
    alpha: list[float]  # softmax over the selected raw logits, in the order of selected
    dense: bool = False  # every agent runs this step (training / test-time training)
    context: list[float] = field(default_factory=list)  # X_i, the vector the router read
    context_shift: float | None = None  # cos(X_i, X_{i-1}): how far the context moved
    note: str = ""  # e.g. "seeded initialisation (untrained)"

    @property
    def threshold(self) -> float:
        return 1.0 / len(self.names) if self.names else 0.0

    def progress_lines(self) -> list[str]:
        weights = ", ".join(f"{name} α {a:.2f}" for name, a in zip(self.selected, self.alpha, strict=False))
        mode = "; dense: all agents run" if self.dense else ""
        shift = f"; cos(X_i, X_i-1) {self.context_shift:.2f}" if self.context_shift is not None else ""
        probs = " ".join(f"{name} {p:.2f}" for name, p in zip(self.names, self.probs, strict=False))
        return [
            f"router ({self.router}): k {self.k}/{self.k_max} → {weights}{mode}{shift}",
            f"  {'Selector weights' if self.router == 'llm' else f'softmax(z/τ={self.tau:g})'}: {probs}"
            f"  [1/N = {self.threshold:.2f}]",
        ]


@ev._register
@dataclass(kw_only=True)
class DmoaStepDone(ev.Event):
    type: ClassVar[str] = "dmoa_step_done"
    round: int  # the step i
    tag: str  # "FINAL" or "CONTINUE": what the run did
    text: str  # the summarizer's reply as given
    found: str = ""  # the tags the reply held: "FINAL", "CONTINUE", "both", "none" ("" when it failed)
    answer: str = ""  # the final answer, when FINAL
    note: str = ""  # how an unusual reply was read ("no tag: treated as [CONTINUE]", "forced at L_max")
    entropy: dict[str, float] = field(default_factory=dict)  # PE per agent (eq. 13), dense steps
    confidence: dict[str, float] = field(default_factory=dict)  # C_i = softmax(-E_i)
    rank_loss: float | None = None  # eq. 14 at this step, for the router as it is
    top_logprobs: int = 0  # the k of the top-k logprobs the entropies were estimated from
    # The step's test results as the Summarizer and the next step's agents read them ("" when none ran); a fork
    # rebuilds their conversations with them (core.methods.dmoa.rebuild). None: recorded before this field.
    feedback: str | None = None

    def progress_lines(self) -> list[str]:
        """Only what the decision line (ManagerDecided) does not say: how the reply was read, entropies."""
        lines = [f"  summarizer reply read as [{self.tag}]: {self.note}"] if self.note else []
        if self.entropy:
            pe = ", ".join(f"{name} {value:.3f}" for name, value in self.entropy.items())
            loss = f"; rank loss {self.rank_loss:.4f}" if self.rank_loss is not None else ""
            lines.append(f"  entropy (top-{self.top_logprobs} logprobs, renormalised): {pe}{loss}")
        return lines


@dataclass
class StepRecord:
    """One step as the router view shows it."""

    number: int
    routed: DmoaRouted | None = None
    done: DmoaStepDone | None = None
    previous: list[str] = field(default_factory=list)  # who ran in step i-1 (the hand-off's senders)
    previous_alpha: list[float] = field(default_factory=list)


def steps_from_events(events: Iterable[ev.Event]) -> dict[int, StepRecord]:
    """Step number -> its record, from any stream (live, replayed, loaded)."""
    steps: dict[int, StepRecord] = {}
    for event in events:
        if isinstance(event, DmoaRouted):
            record = steps.setdefault(event.round, StepRecord(event.round))
            record.routed = event
            before = steps.get(event.round - 1)
            if before is not None and before.routed is not None:
                record.previous = list(before.routed.selected)
                record.previous_alpha = list(before.routed.alpha)
        elif isinstance(event, DmoaStepDone):
            steps.setdefault(event.round, StepRecord(event.round)).done = event
    return steps
