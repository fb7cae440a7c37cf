"""DyTopo's Manager (arXiv 2602.06039, §3.2, Algorithm 1): it sets the first goal, and after each round reviews
the workers' outputs to end the run (with its final answer) or set the next round's goal. A Manager that wants to
stop while the tests fail, or against the user's continue, is overruled (ours)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from core.methods.dytopo.calls import DyTopoCalls
from core.methods.dytopo.steer import DyTopoSteering
from core.routing.dytopo import RoutingResult
from core.runtime import events as ev
from core.runtime.context import shrink_pieces
from core.runtime.engine import AgentResult, Evaluation
from core.runtime.run_context import notice, start_phase

if TYPE_CHECKING:
    from core.runtime.run_context import RunContext

FIRST_GOAL = "Work on the problem from your role's perspective and produce a first complete attempt."


class DyTopoManager:
    """The Manager's plan and reviews for one run; ``max_rounds`` reads the run's current limit."""

    def __init__(self, ctx: RunContext, calls: DyTopoCalls, steer: DyTopoSteering,
                 max_rounds: Callable[[], int]) -> None:
        self.ctx = ctx
        self.calls = calls
        self.steer = steer
        self.max_rounds = max_rounds

    async def plan(self) -> str:
        """The first goal (Algorithm 1, line 1); a fallback when the Manager gives none."""
        start_phase(self.ctx, ev.Phase.PLAN, "Manager sets the first goal")
        decision, status = await self.calls.manager_call(ev.CallKind.PLAN, self.calls.plan_messages(self.max_rounds()))
        goal = decision.goal if decision is not None and decision.goal else ""
        if not goal:
            goal = FIRST_GOAL
        self.ctx.emit(
            ev.ManagerDecided(
                round=self.ctx.state.round,
                terminate=False,
                next_goal=goal,
                reasoning=decision.reasoning if decision is not None else "",
                status=status,
                plan=True,
            )
        )
        return goal

    async def review(
        self, round_no: int, goal: str, outputs: dict[str, AgentResult], evaluation: Evaluation | None,
        routing: RoutingResult | None,
    ) -> Any | None:
        """The round's review (§3.2): the workers' outputs in the graph's order (from round 2), the tests'
        results and the user's goal change; the decision as the run may follow it."""
        start_phase(self.ctx, ev.Phase.MANAGER, "Manager reviews the round")
        order = [name for name in (routing.order if (routing and round_no > 1) else self.ctx.spec.workers)
                 if name in outputs]
        extra = f"TEST RESULTS:\n{evaluation.feedback}" if evaluation is not None else ""
        extra = "\n\n".join(part for part in (extra, self.steer.review_note(round_no)) if part)

        def build(_: list[str], texts: list[str]) -> list[dict[str, str]]:
            summary = review_summary(order, outputs, texts)
            return self.calls.review_messages(round_no, self.max_rounds(), goal, summary, extra)

        texts = [outputs[name].public for name in order]
        # Over the model's context, every worker's output is cut to an equal share (the round is one step).
        decision, status = await self.calls.manager_call(
            ev.CallKind.MANAGER, build([], texts), shrink=shrink_pieces(build, [], texts)
        )
        self._overrule(decision, round_no, goal, evaluation)
        self.ctx.emit(
            ev.ManagerDecided(
                round=round_no,
                terminate=bool(decision is not None and decision.terminate),
                next_goal=decision.goal if decision is not None else goal,
                reasoning=decision.reasoning if decision is not None else "",
                final_answer=decision.final_answer if decision is not None else "",
                status=status,
            )
        )
        return decision

    def _overrule(self, decision: Any | None, round_no: int, goal: str, evaluation: Evaluation | None) -> None:
        """An end the run may not take: failing tests before the last round, or the user's continue."""
        tests_fail = evaluation is not None and not evaluation.passed
        if decision is not None and decision.terminate and tests_fail and round_no < self.max_rounds():
            # The Manager may not end a run as solved while the tests fail.
            notice(self.ctx, "Manager wanted to stop but the tests fail: the run goes on", "info")
            decision.terminate = False
            decision.goal = decision.goal or "Fix the code so that every test passes."
        if decision is not None and decision.terminate and self.steer.veto(round_no):
            decision.terminate = False  # the user's continue: one more round, on the Manager's goal or this one
            decision.goal = decision.goal or goal


def review_summary(order: list[str], outputs: Mapping[str, Any], texts: list[str] | None = None) -> str:
    """The TEAM OUTPUTS of the Manager's review: each worker's output (``texts``: as cut to fit, else its
    public text), status and answer, in ``order``. ``outputs``: AgentResult or a recorded AgentFinished."""
    shown = texts if texts is not None else [outputs[name].public for name in order]
    return "\n\n".join(
        f"## {name} ({outputs[name].status})\n{text or '(no output)'}"
        + (f"\nAnswer: {outputs[name].answer}" if outputs[name].answer else "")
        for name, text in zip(order, shown, strict=True)
    )
