"""DMoA's Summarizer (Wu et al., arXiv 2605.15706, Alg. 2): after each step it reads the problem and the routed
agents' responses and answers ``[FINAL]`` with the answer or ``[CONTINUE]``. At L_max it is told to answer, and
a reply without [FINAL] is taken as the answer (or the answer role's latest output when empty); a [FINAL] with
no answer after it reads as [CONTINUE] (our readings, docs/fidelity.md). On dense steps the step's record also
carries each agent's confidence (eq. 13-14) and the router's ranking loss (eq. 15)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from core.evaluation.extract import latest_code
from core.methods.dmoa.events import CALL_SUMMARY, DmoaStepDone
from core.methods.dmoa.prompts import summarizer_instructions
from core.methods.dmoa.routing import TAG_FINAL, Choice, confidence, parse_summary, rank_loss
from core.methods.dmoa.threads import DmoaRequests, keep_reply
from core.runtime import events as ev
from core.runtime.engine import AgentResult, RunAborted
from core.runtime.events import CallStatus
from core.runtime.outcome import EndReason, RunOutcome
from core.runtime.parsing import is_template_copy, own_text

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext

SUMMARIZER = "Summarizer"
PHASE_SUMMARY = "summarize"


class _Reading(NamedTuple):
    """The Summarizer's reply read: its tag, the text after it, what was found, and a note on the reading."""

    tag: str
    body: str
    found: str
    note: str


def headline(text: str, limit: int = 240) -> str:
    """The first line of prose in a reply (not a code fence), for one-line decision summaries."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("```"):
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return "(the answer is code)" if "```" in text else ""


def _read(result: AgentResult) -> _Reading:
    if result.status == CallStatus.DONE:
        summary = parse_summary(result.public)
        return _Reading(summary.tag, summary.body, summary.found, summary.note)
    why = "copied its instructions" if is_template_copy(result.error) else "call failed"
    return _Reading("CONTINUE", "", "", f"the Summarizer's {why}: treated as [CONTINUE]")


def _scores(names: list[str], choice: Choice, entropy: dict[str, float]) -> tuple[dict[str, float], float | None]:
    """On a dense step: each agent's confidence (eq. 13-14) and the router's ranking loss (eq. 15)."""
    conf: dict[str, float] = {}
    loss: float | None = None
    if entropy:
        known = [n for n in names if n in entropy]
        values = confidence([entropy[n] for n in known])
        conf = {n: round(float(c), 6) for n, c in zip(known, values, strict=True)}
        if len(known) >= 2:
            logits = [float(choice.logits[names.index(n)]) for n in known]
            loss = round(rank_loss(logits, [entropy[n] for n in known]), 6)
    return conf, loss


@dataclass
class Summarizer:
    """One run's Summarizer: asked once per step whether the run ends."""

    ctx: RunContext
    requests: DmoaRequests
    names: list[str]
    l_max: int
    top_logprobs: int

    async def decide(
        self, step: int, responses: list[tuple[str, str]], feedback: str, choice: Choice, entropy: dict[str, float]
    ) -> RunOutcome | None:
        """The step's decision, recorded; the run's outcome when it ends here, else None."""
        ctx = self.ctx
        last = step >= self.l_max
        messages, shrink, turn = self.requests.summarizer(SUMMARIZER, step, self.l_max, responses, feedback)
        told = summarizer_instructions(ctx.spec.team.name, step, self.l_max)
        result, _ = await ctx.call(SUMMARIZER, CALL_SUMMARY, messages, kind="summarizer", parser=own_text(told),
                                   reply_format="[FINAL] and the answer, or [CONTINUE] and what is missing",
                                   shrink=shrink)
        if result.connection_failed:
            raise RunAborted(result.error)
        keep_reply(turn, result)
        tag, body, found, note = _read(result)
        answer, source = (body, SUMMARIZER.lower()) if tag == TAG_FINAL else ("", "")
        if last and tag != TAG_FINAL:
            answer, source = self._forced_answer(body)
            note = "; ".join(x for x in (note, "last step (L_max): its reply is taken as the final answer") if x)
        conf, loss = _scores(self.names, choice, entropy)
        terminate = tag == TAG_FINAL or last
        ctx.emit(
            ev.ManagerDecided(
                round=step,
                terminate=terminate,
                next_goal="",
                reasoning=f"[{tag}] {headline(body)}".strip() if result.status == CallStatus.DONE else note,
                final_answer=answer if terminate else "",
                status=result.status,
            )
        )
        ctx.emit(
            DmoaStepDone(
                round=step,
                tag=tag,
                text=result.public,
                found=found,
                answer=answer if terminate else "",
                note=note,
                entropy=entropy,
                confidence=conf,
                rank_loss=loss,
                top_logprobs=self.top_logprobs if entropy else 0,
                feedback=feedback,
            )
        )
        if tag == TAG_FINAL:
            return RunOutcome(EndReason.SUMMARIZER, f"the Summarizer gave [FINAL] at step {step}", answer, source)
        if last:
            return RunOutcome(EndReason.MAX_ROUNDS, f"reached L_max ({self.l_max} steps)", answer, source)
        return None

    def _forced_answer(self, body: str) -> tuple[str, str]:
        """At L_max without [FINAL]: the Summarizer's reply if it holds an answer, else the answer role's."""
        usable = bool(latest_code([body])) if self.ctx.spec.team.name == "code" else bool(body.strip())
        if usable:
            return body.strip(), SUMMARIZER.lower()
        return self.ctx.state.answer
