"""What TopoWeaver-R1's turns leave for the next ones (Algorithm 1): the history H_k (eq. 3) the
Orchestrator reads, the view View^(k-1) (eq. 15) the agents read, each agent's memory Mem_i (eq. 15), and
the best answer a turn's check examined (the run's answer when no turn passes)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.evaluation.extract import latest_code
from core.methods.topoweaver.checks import Check, answer_line
from core.methods.topoweaver.plan import Plan, Validation
from core.methods.topoweaver.prompts import LOG_CHARS, TurnNote, trimmed
from core.runtime.config import DomainName


@dataclass
class TurnRecord:
    """One turn as the next turns see it."""

    turn: int
    validation: Validation
    raw: str = ""  # the orchestrator's reply
    plan: Plan | None = None  # the plan that ran (the orchestrator's, or the fallback)
    fallback: bool = False
    status: str = ""
    passed: bool = False
    failing_test: str = ""
    log: str = ""
    source: str = ""

    def history_item(self) -> str:
        """``turn 1: 5 agents, 3 steps, WRONG_ANSWER``."""
        if self.plan is None:
            return f"turn {self.turn}: {self.validation.tag}"
        size = f"{len(self.plan.agents)} agents, {len(self.plan.steps)} steps"
        via = ", fallback plan" if self.fallback else ""
        return f"turn {self.turn}: {size}{via}, {self.status}"

    def take_check(self, check: Check) -> None:
        self.status, self.passed = check.status, check.passed
        self.failing_test, self.log, self.source = check.failing_test, check.log, check.source


@dataclass
class Answer:
    text: str
    source: str
    passed: bool = False


@dataclass
class TurnHistory:
    """The turns so far: their records, every agent's memory, which agents ran, the best answer checked."""

    records: list[TurnRecord] = field(default_factory=list)
    memory: dict[str, dict[int, str]] = field(default_factory=dict)  # Mem_i: agent id -> turn -> its output
    ran: dict[int, list[str]] = field(default_factory=dict)  # turn -> ids of the agents that ran
    answer: Answer | None = None

    def keep_answer(self, text: str, source: str, passed: bool) -> None:
        """A checked answer replaces the kept one unless that one passed and this one did not."""
        if text and (passed or self.answer is None or not self.answer.passed):
            self.answer = Answer(text, source, passed)

    def keep_check(self, check: Check) -> None:
        self.keep_answer(check.answer, check.source, check.passed)

    def remember_answer(self, record: TurnRecord, domain: str) -> None:
        """The answer a replayed turn's check examined, as the live check kept it."""
        text = self.memory.get(record.source, {}).get(record.turn, "")
        if not text or (self.answer is not None and self.answer.passed):
            return
        if domain == DomainName.CODE:
            code = latest_code([text])
            if code:
                self.answer = Answer(f"```python\n{code}\n```", record.source, record.passed)
        else:
            self.answer = Answer(answer_line(text) or text, record.source, record.passed)

    def final(self, domain: str) -> tuple[str, str]:
        """(answer, source): the kept answer, else (code) the newest code any agent wrote."""
        if self.answer is not None:
            return self.answer.text, f"extracted:{self.answer.source}"
        if domain == DomainName.CODE:  # nothing was tested: the newest code any coder or debugger wrote
            for turn in sorted(self.ran, reverse=True):
                for agent_id in reversed(self.ran[turn]):
                    code = latest_code([self.memory.get(agent_id, {}).get(turn, "")])
                    if code:
                        return f"```python\n{code}\n```", f"extracted:{agent_id}"
        return "", ""

    def history_line(self) -> str:
        """``turn 1: 5 agents, 3 steps, WRONG_ANSWER → turn 2: 3 agents, 2 steps, PASSED``."""
        return " → ".join(r.history_item() for r in self.records)

    def notes(self, domain: str) -> list[TurnNote]:
        """H_k (eq. 3): per earlier turn, the plan (or the invalid reply and its tag) and its outcome."""
        notes = []
        for r in self.records:
            v = r.validation
            if not v.valid:
                # A copy of the shape is not shown back as if it were a plan (issue 44).
                wrote = "(the reply template's shape)" if v.rule == "copied" else (
                    trimmed(v.yaml_text or r.raw, LOG_CHARS) or "(nothing)")
                text = f"Your plan was rejected: {v.badge()}.\nWhat you wrote:\n{wrote}"
                if r.fallback and r.plan is not None:
                    text += f"\nA fallback plan ran instead: {r.plan.shape()}."
            else:
                text = f"Your plan ({r.plan.difficulty if r.plan else '?'}) ran: {r.plan.shape() if r.plan else ''}"
            if r.plan is not None:
                check = "Tester (sandbox)" if domain == DomainName.CODE else "Verifier"
                text += f"\n{check}: {r.status}" + (f"; checked {r.source}'s output" if r.source else "")
                if r.failing_test:
                    text += f"\nFailing test: {trimmed(r.failing_test, 400)}"
                if r.log:
                    text += f"\nLog:\n{trimmed(r.log, LOG_CHARS)}"
            notes.append(TurnNote(r.turn, text))
        return notes

    def view(self, plan: Plan) -> str:
        """View^(k-1) (eq. 15): the last turn's topology and error cues, with the orchestrator's note."""
        if not self.records:
            return ""
        last = self.records[-1]
        lines = []
        if last.plan is None:
            lines.append(f"Turn {last.turn}: the plan was invalid ({last.validation.badge()}); nothing ran.")
        else:
            lines.append(f"Turn {last.turn} ran {last.plan.shape()} and ended {last.status}.")
            if last.failing_test:
                lines.append(f"Failing test: {trimmed(last.failing_test, 400)}")
            if last.log:
                lines.append(f"Log:\n{trimmed(last.log, LOG_CHARS)}")
        if plan.notes:
            lines.append(f"Orchestrator's note: {plan.notes}")
        return "\n".join(lines)
