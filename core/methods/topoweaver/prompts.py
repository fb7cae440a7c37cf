"""TopoWeaver-R1's prompts, in our own words: the orchestrator's (the structure of the paper's App. B.4
system prompt: the agent types and their constraints, the difficulty levels, scaling the team to the
difficulty, the rules for the first and the last step, the turn limit) and the agents' (eq. 15: the
problem, the role, the last turn's summary, the agent's own earlier outputs, the outputs it refs).

Every user message holds the problem after a ``PROBLEM:`` line, as the scripted servers expect.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.methods.topoweaver.copies import PLAN_SHAPE, SLOTS_NOTE
from core.methods.topoweaver.plan import (
    ALGORITHMMER,
    CODER,
    DEBUGGER,
    N_MAX,
    PLANNER,
    SEARCHER,
    TESTER,
    THINKER,
    VERIFIER,
    PlanAgent,
    agent_types,
    checker_roles,
)

ORCHESTRATOR = "Orchestrator"
CALL_ORCHESTRATE = "tw-orchestrate"  # the orchestrator writes a turn's plan
CALL_AGENT = "tw-agent"  # an agent of the plan does its part
CALLS = (CALL_ORCHESTRATE, CALL_AGENT)

OUTPUT_CHARS = 12_000  # how much of one output another agent reads
LOG_CHARS = 1_500  # how much of a test log or an invalid reply the next turn sees

_TYPE_JOBS_CODE = {
    PLANNER: "lays out the algorithmic strategy",
    SEARCHER: "recalls the knowledge the task needs (algorithms, library functions, known pitfalls)",
    ALGORITHMMER: "breaks the problem into its algorithmic components and subroutines",
    CODER: "writes the code from what the agents it reads have produced",
    DEBUGGER: "repairs faulty code (only after a coder)",
    TESTER: "writes test cases; the code it reads is run against them (only in the last step, reading a "
    "coder or a debugger)",
}
_TYPE_JOBS_REASONING = {
    PLANNER: "splits the question into sub-questions and a plan to answer them",
    SEARCHER: "recalls the facts, definitions and formulas the question needs",
    THINKER: "reasons step by step to an answer",
    VERIFIER: "checks an answer and gives the verdict (only in the last step, reading a thinker)",
}

_EXAMPLE_CODE = """difficulty: interview
notes: ""
steps:
  - step: 1
    agents:
      - {id: planner_1, type: planner, ref: []}
      - {id: searcher_1, type: searcher, ref: []}
  - step: 2
    agents:
      - {id: coder_1, type: coder, ref: [planner_1, searcher_1]}
  - step: 3
    agents:
      - {id: tester_1, type: tester, ref: [coder_1]}"""

_EXAMPLE_REASONING = """difficulty: interview
notes: ""
steps:
  - step: 1
    agents:
      - {id: planner_1, type: planner, ref: []}
  - step: 2
    agents:
      - {id: thinker_1, type: thinker, ref: [planner_1]}
  - step: 3
    agents:
      - {id: verifier_1, type: verifier, ref: [thinker_1]}"""


def orchestrator_system_prompt(domain: str, turns: int) -> str:
    jobs = _TYPE_JOBS_CODE if domain == "code" else _TYPE_JOBS_REASONING
    types = "\n".join(f"- {t}: {jobs[t]}" for t in agent_types(domain))
    closer, readable = checker_roles(domain)
    example = _EXAMPLE_CODE if domain == "code" else _EXAMPLE_REASONING
    retry = (
        "the tester's test run fails" if domain == "code" else "the verifier does not accept the answer"
    )
    rules = [
        "Judge the task's difficulty: introductory, interview or competition (from easiest to hardest).",
        f"Size the team to the difficulty. Easy tasks need few agents and few steps (at most {N_MAX[1]} agents "
        f"for introductory, {N_MAX[2]} for interview, {N_MAX[3]} for competition); add agents and steps only "
        "where a harder task needs them.",
        "Every agent in the first step has an empty ref list.",
        "A ref names an agent of an earlier step: never one of the same or a later step, never itself.",
        f"The last step contains a {closer} whose ref includes at least one {' or '.join(readable)}.",
        *(["A debugger may only appear in a step after one that holds a coder."] if domain == "code" else []),
        f"The team has at most {turns} turn(s). When {retry}, you see what went wrong and write a new plan "
        "for the next turn. Reusing an id from an earlier turn lets that agent see its own earlier output; "
        "`id@N` in a ref reads that agent's output from turn N. Use notes to tell the team, in one or two "
        "sentences, what went wrong and what to change.",
    ]
    numbered = "\n".join(f"{i}. {rule}" for i, rule in enumerate(rules, start=1))
    return (
        f"You are the Orchestrator of a team of AI agents solving one {domain} problem. You do not solve it "
        "yourself: you decide which agents work on it and who reads whose output, as an interaction plan "
        "written in YAML.\n\n"
        "A plan is a list of steps. All agents of a step run at the same time; the steps run one after "
        "another. Each agent has an id (a letter, then letters, digits or underscores, e.g. coder_1), a type, "
        "and ref: the ids of agents in EARLIER steps whose outputs it reads.\n\n"
        f"Agent types:\n{types}\n\nRules:\n{numbered}\n\n"
        "Reply with the YAML plan only, in one ```yaml block, in this shape:\n"
        f"```yaml\n{PLAN_SHAPE}\n```\n{SLOTS_NOTE}\n\n"
        f"For instance, a plan for another task of the same kind (an example, not your plan):\n{example}"
    )


@dataclass(frozen=True)
class TurnNote:
    """What the orchestrator hears about an earlier turn (its history H, [TopoWeaver-R1 eq. 3, Alg. 1])."""

    turn: int
    text: str


def orchestrator_request(problem: str | None, turn: int, turns: int, history: list[TurnNote]) -> str:
    """The Orchestrator's request; without ``problem`` (and with only the new history) when its conversation
    already holds them."""
    past = "\n\n".join(f"TURN {h.turn}:\n{h.text}" for h in history)
    ask = (
        f"Write the plan for turn 1 of at most {turns}."
        if turn == 1
        else f"Write the plan for turn {turn} of at most {turns}, changing what the history shows did not work."
    )
    return (
        ("" if problem is None else f"PROBLEM:\n{problem}\n\n")
        + (f"HISTORY OF EARLIER TURNS:\n{past}\n\n" if past else "") + ask
    )


# --- agents -------------------------------------------------------------------------------------------

_ROLE_CODE = {
    PLANNER: "Lay out the strategy: the approach, the algorithm's steps and the edge cases to handle. Do not "
    "write the full solution.",
    SEARCHER: "Recall the knowledge this problem needs: relevant algorithms and data structures, useful "
    "standard-library functions, known pitfalls. You cannot browse: rely on what you know.",
    ALGORITHMMER: "Decompose the problem into algorithmic components and subroutines, each with its inputs, "
    "outputs and complexity.",
    CODER: "Write the complete solution in Python: every function definition with the imports it needs, in "
    "one ```python block. Keep the names and signatures the problem asks for.",
    DEBUGGER: "Find and fix the bugs in the code you read, using any failing test reported. Reply with the "
    "complete corrected solution in one ```python block.",
    TESTER: "Write test cases for the problem as plain assert statements in one ```python block, edge cases "
    "first, calling the function the problem names with the expected results. Do not write the solution: "
    "the code you read is run against your tests and the problem's own examples.",
}
_ANSWER_LINE = {
    "math": "ANSWER: <the final answer only, as short as possible; LaTeX allowed>",
    "general": "ANSWER: <your complete, direct answer>",
}


def _role_reasoning(kind: str, domain: str) -> str:
    answer = _ANSWER_LINE.get(domain, _ANSWER_LINE["general"])
    return {
        PLANNER: "Split the question into sub-questions and lay out a plan to answer them. Do not answer yet.",
        SEARCHER: "Recall the facts, definitions and formulas the question needs. You cannot browse: rely "
        "on what you know.",
        THINKER: f"Reason carefully, step by step, to the answer. End with the line\n{answer}",
        VERIFIER: "Check the reasoning and the answer you read, step by step. End with two lines:\n"
        f"{answer}\nVERDICT: CORRECT   (or VERDICT: INCORRECT)",
    }[kind]


def agent_system_prompt(domain: str, agent: PlanAgent) -> str:
    job = _ROLE_CODE[agent.type] if domain == "code" else _role_reasoning(agent.type, domain)
    return (
        f"You are {agent.id}, a {agent.type} agent in a team solving one {domain} problem. An Orchestrator "
        "placed you in a layered plan: you read the outputs of the agents it connected to you, and later "
        f"agents read yours.\nYour job: {job}"
    )


def trimmed(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 40].rstrip() + "\n… [trimmed]"


def agent_request(
    problem: str | None,
    agent: PlanAgent,
    *,
    turn: int,
    steps: int,
    view: str,
    memory: list[tuple[int, str]],
    reads: list[tuple[str, str]],
) -> str:
    """``memory``: (turn, text) of this agent's own earlier outputs; ``reads``: (label, text) of the
    outputs it refs (eq. 15's View, Mem and in-neighbour messages)."""
    parts = [] if problem is None else [f"PROBLEM:\n{problem}\n"]
    parts.append(_role_line(agent, turn, steps))
    if view:
        parts.append(f"\nTHE LAST TURN (the Orchestrator's summary):\n{view}")
    if memory:
        mine = "\n\n".join(f"[your output in turn {t}]\n{trimmed(text, OUTPUT_CHARS)}" for t, text in memory)
        parts.append(f"\nYOUR OWN EARLIER OUTPUT:\n{mine}")
    if reads:
        theirs = "\n\n".join(f"[from {label}]\n{trimmed(text, OUTPUT_CHARS) or '(no output)'}"
                             for label, text in reads)
        parts.append(f"\nOUTPUTS YOU READ:\n{theirs}")
    parts.append(f"\n{AGENT_ASK}")
    return "\n".join(parts)


AGENT_ASK = "Do your job now."


def _role_line(agent: PlanAgent, turn: int, steps: int) -> str:
    return f"YOUR ROLE: {agent.type} (agent {agent.id}, step {agent.step} of {steps}, turn {turn})"


def agent_instructions(domain: str, agent: PlanAgent, turn: int, steps: int) -> list[str]:
    """The app's own words in an agent's request (never the problem nor what it reads): a reply that only
    repeats them copied its instructions (issue 44, core.runtime.parsing.own_text)."""
    return [agent_system_prompt(domain, agent), _role_line(agent, turn, steps), AGENT_ASK]
