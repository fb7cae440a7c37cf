"""Teams, the Manager plus role workers, and each domain's built-in team (paper Tables 4–5, reference
rosters)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Role:
    name: str
    title: str
    description: str
    # What this role typically needs / offers; used when a reply cannot be parsed so routing still
    # has descriptors to embed (paper Table 6 style).
    default_query: str
    default_key: str
    # A custom team's per-agent endpoint and sampling (core.runtime.teams); None: the run's own.
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None

    @property
    def has_endpoint(self) -> bool:
        """True when this agent's calls go to another model or endpoint than the run's."""
        return bool(self.model or self.base_url or self.api_key_env)


@dataclass(frozen=True)
class Team:
    name: str
    manager: Role
    workers: tuple[Role, ...]
    # The worker whose output holds the answer when the Manager gives none.
    answer_role: str
    # The Manager's bar for declaring the task complete.
    completion_rule: str
    # A user team's name (core.runtime.teams); "" for the built-in teams, whose name is the domain's.
    custom_name: str = ""

    @property
    def team_name(self) -> str:
        return self.custom_name or self.name

    @property
    def worker_names(self) -> list[str]:
        return [w.name for w in self.workers]

    def role(self, name: str) -> Role:
        if name == self.manager.name:
            return self.manager
        for worker in self.workers:
            if worker.name == name:
                return worker
        raise KeyError(name)


def _manager(description: str) -> Role:
    return Role(
        "Manager",
        "Workflow Orchestrator",
        description,
        "I need status updates and results from every team member.",
        "I coordinate the team, set each round's goal and decide when the task is complete.",
    )


CODE = Team(
    name="code",
    manager=_manager("Set a concrete goal for each round and judge whether working code exists and its tests pass."),
    workers=(
        Role(
            "Developer",
            "Implementation Engineer",
            "Write complete code that runs as given. When classes are used, also expose plain functions "
            "as entry points.",
            "I need the interface design, the algorithm to use and the failing test cases.",
            "I provide the complete runnable Python implementation.",
        ),
        Role(
            "Researcher",
            "Algorithm Researcher",
            "Name the standard algorithm that fits and its time and space complexity. State conclusions, "
            "not derivations.",
            "I need the problem constraints and the current implementation to assess.",
            "I provide the recommended algorithm and its complexity analysis.",
        ),
        Role(
            "Tester",
            "Test Engineer",
            "Give the decisive test cases with expected results, edge cases first. Describe how to test; "
            "do not paste long execution logs.",
            "I need the Developer's implementation to verify against test cases.",
            "I provide test cases with expected results and a report of failures.",
        ),
        Role(
            "Designer",
            "API Designer",
            "Design the public interface: function and class signatures with type hints only, no bodies.",
            "I need the requirements and the algorithm choice to shape the interface.",
            "I provide the API design: function signatures and type hints.",
        ),
    ),
    answer_role="Developer",
    completion_rule="Only declare the task complete when code exists AND its tests pass.",
)

MATH = Team(
    name="math",
    manager=_manager("Set a goal for each round and judge whether a solution exists and has been verified."),
    workers=(
        Role(
            "ProblemParser",
            "Math Problem Analyst",
            "Break the statement down: the known conditions, the target to find, and a numbered plan of solving steps.",
            "I need the problem statement and any objections to my plan.",
            "I provide the problem analysis, the conditions and a step-by-step solving plan.",
        ),
        Role(
            "Solver",
            "Mathematical Solver",
            "Carry out the derivation step by step with symbolic reasoning, and give the final answer.",
            "I need a problem analysis and solving plan, and the verifier's corrections.",
            "I provide a detailed step-by-step solution and the final answer.",
        ),
        Role(
            "Verifier",
            "Logic Verifier",
            "Check every step of the derivation for logical gaps and arithmetic errors; say clearly "
            "whether the answer holds.",
            "I need a detailed solution to verify.",
            "I provide a verification of the solution, step by step, with any errors found.",
        ),
    ),
    answer_role="Solver",
    completion_rule="Only declare the task complete when a solution exists AND verification passes.",
)

GENERAL = Team(
    name="general",
    manager=_manager("Set a goal for each round and judge whether the analysis is balanced and complete."),
    workers=(
        Role(
            "Analyst",
            "Analyst",
            "Lay out the facts, the options and the considerations that matter, with evidence.",
            "I need the question's scope and critiques of my analysis.",
            "I provide a structured analysis of the facts, options and trade-offs.",
        ),
        Role(
            "Critic",
            "Critic",
            "Find the weak points: unstated assumptions, missing perspectives, risks and counter-arguments.",
            "I need an analysis or a draft conclusion to critique.",
            "I provide critiques, risks and counter-arguments.",
        ),
        Role(
            "Synthesizer",
            "Synthesizer",
            "Combine the analysis and the critiques into one balanced, actionable conclusion.",
            "I need the analysis and the critiques to combine.",
            "I provide a balanced synthesis and a final recommendation.",
        ),
    ),
    answer_role="Synthesizer",
    completion_rule="Only declare the task complete when the conclusion addresses the critiques raised.",
)

DOMAIN_BY_NAME: dict[str, Team] = {d.name: d for d in (CODE, MATH, GENERAL)}


def builtin_team(name: str) -> Team:
    try:
        return DOMAIN_BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown domain {name!r}: choose one of {', '.join(DOMAIN_BY_NAME)}") from None
