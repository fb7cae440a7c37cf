"""A two-sample inspect task for the solver's tests: MATH problems whose answer the scripted server knows."""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes

from core.demo.scripts import DEMO_PROBLEMS
from core.interop.inspect_solver import swarm_solver

ANSWER = "\\frac{14}{3}"


@task
def two_samples(method: str | None = None) -> Task:
    """``method``: the task's own solver, swarm_tui/swarm with that method (else the eval's --solver)."""
    return Task(
        solver=swarm_solver(method=method, max_rounds=2) if method else None,
        dataset=[
            Sample(id="f-sum", input=DEMO_PROBLEMS["math"], target=ANSWER, metadata={"domain": "math"}),
            Sample(id="f-sum-again", input="With f(x) = (3x-2)/(x-2), give f(-2)+f(-1)+f(0) as a fraction.",
                   target=ANSWER, metadata={"domain": "math"}),
        ],
        scorer=includes(),
    )
