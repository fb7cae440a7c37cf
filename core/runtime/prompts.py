"""Prompts: strict-JSON contracts for workers and the Manager (paper Appendix B, in our own words).

Which call a request is (agent, call kind, round) travels in an HTTP header (core.llm.call_id), not in
the messages: a real model reads only the task.
"""

from __future__ import annotations

from enum import StrEnum

from core.runtime.events import CallKind
from core.runtime.rosters import Role, Team

# JSON field names of the contracts. The parser accepts the paper's spellings too (see core.runtime.parsing).
WORKER_FIELDS = ("public", "private", "query", "key")
DESCRIPTOR_FIELDS = ("query", "key")
MANAGER_FIELDS = ("goal", "terminate", "reasoning", "final_answer")

# The reply shapes, one per call kind. A worker's system prompt carries only the shape its call needs.
# Every value the model writes is an angle-bracketed slot (issue 44): a small model that copies the shape
# verbatim gives itself away (core.runtime.copies), and no slot reads like content.
_WORK_SCHEMA = """{
  "public": "%s",
  "private": %s%s
}"""
QUERY_SLOT = "<what you need next from teammates, in one sentence>"
KEY_SLOT = "<what you can provide to teammates, in one sentence>"
_NEXT_DESCRIPTORS = f',\n  "query": "{QUERY_SLOT}",\n  "key": "{KEY_SLOT}"'
# What the two fields promise depends on what travels along an edge (core.methods.dytopo PAYLOADS).
TEAMMATE_SLOT = "<a teammate's name>"
PUBLIC_SHARED_SLOT = "<your work this round, for the Manager and the teammates routed to you>"
NOTE_SLOT = "<optional note for that teammate only>"
PUBLIC_RECORD_SLOT = "<your work this round, for the Manager and the record>"
ALL_SLOT = "<what the teammates routed to you receive>"
ONE_SLOT = "<optional: for one teammate>"
ANSWER_SLOT = "<your final answer, as short as possible (e.g. a number or expression)>"
_PRIVATE_NOTE = f'{{"{TEAMMATE_SLOT}": "{NOTE_SLOT}"}}'
_PRIVATE_MESSAGE = f'{{"all": "{ALL_SLOT}", "{TEAMMATE_SLOT}": "{ONE_SLOT}"}}'

_DESCRIPTOR_SCHEMA = f"""{{
  "query": "{QUERY_SLOT}",
  "key": "{KEY_SLOT}"
}}"""

GOAL_SLOT = "<the concrete goal for the next round; empty when terminating>"
REASONING_SLOT = "<why you continue or stop, citing the team's results>"
FINAL_SLOT = "<when terminating: the complete final answer (for code, the full code)>"
_MANAGER_SCHEMA = f"""{{
  "goal": "{GOAL_SLOT}",
  "terminate": false,
  "reasoning": "{REASONING_SLOT}",
  "final_answer": "{FINAL_SLOT}"
}}"""
# Every slot of the shapes above, and the words the shapes had before the slots (a model may have seen them).
REPLY_SLOTS = (
    QUERY_SLOT, KEY_SLOT, TEAMMATE_SLOT, PUBLIC_SHARED_SLOT, NOTE_SLOT, PUBLIC_RECORD_SLOT, ALL_SLOT, ONE_SLOT,
    ANSWER_SLOT, GOAL_SLOT, REASONING_SLOT, FINAL_SLOT,
    "what you need next from teammates (one sentence)", "what you can provide to teammates (one sentence)",
    "<Teammate>", "optional note for that teammate only", "optional: for one teammate",
    "the concrete goal for the next round (empty when terminating)",
    "your final answer, as short as possible (e.g. a number or expression)",
)
_SLOTS_NOTE = "Write your own text in place of every <...> slot; a reply that repeats a slot is refused."

_STRICT = "Reply with ONLY one JSON object: no prose, no Markdown fences; escape newlines in strings as \\n."
_SPECIFIC = "query and key route messages by meaning: name functions, steps, quantities."


# How a prompt's parts are ordered (the methods' ``prompt_order`` option). The parts are the same either way.
# "cache": what persists comes first and what is new comes last (role, problem, memory in the order it
# arrived, then this round's goal and inbox, then the call's instruction and reply shape), so each prompt of
# an agent begins with its previous one and a server's prefix cache (llama.cpp slots, vLLM prefix caching,
# SGLang's radix cache) prefills each token once. "paper": the reference templates' order (the reply shape in
# the system prompt, the round's goal before the memory).
# "conversation" (the default): each agent's requests form one growing chat (core.runtime.conversation), which
# begins with the team-wide preamble every agent shares (the problem, the team, the rules of a round) and only
# then the agent's role, so a global prefix cache prefills the problem once per team.
class PromptOrder(StrEnum):
    CONVERSATION = "conversation"
    CACHE = "cache"
    PAPER = "paper"


PROMPT_ORDERS = tuple(PromptOrder)


def worker_intro(team: Team, role: Role) -> str:
    """Who the worker is: the part of its system prompt every call kind shares."""
    teammates = ", ".join(w.name for w in team.workers if w.name != role.name)
    return (
        f"You are {role.name}, the {role.title}, in a team solving one {team.name} problem in rounds "
        f"whose goals a Manager sets. Teammates: {teammates}.\n"
        f"Your role: {role.description}\n{_STRICT}\n"
    )


def reply_shape(team: Team, role: Role, call: str = CallKind.WORK, *, private_only: bool = False) -> str:
    """The one reply shape this call needs. ``private_only``: only the private message travels along an
    edge (the paper's eq. 3), so the shape says which field teammates receive."""
    if call == CallKind.DESCRIPTORS:
        return f"Use exactly this shape:\n{_DESCRIPTOR_SCHEMA}\n{_SLOTS_NOTE} {_SPECIFIC}"
    answer_field = f',\n  "answer": "{ANSWER_SLOT}"'
    public, private = (PUBLIC_RECORD_SLOT, _PRIVATE_MESSAGE) if private_only else (PUBLIC_SHARED_SLOT, _PRIVATE_NOTE)
    # A phased work call (CallKind.WORK) stated its descriptors in phase A; a single-pass call gives the next ones.
    extra = _NEXT_DESCRIPTORS if call == CallKind.SINGLE_PASS else ""
    if team.name == "math" and role.name == team.answer_role:
        extra += answer_field
    schema = _WORK_SCHEMA % (public, private, extra)
    tail = f" {_SPECIFIC}" if call == CallKind.SINGLE_PASS else ""
    return f"Use exactly this shape:\n{schema}\n{_SLOTS_NOTE}{tail}"


def worker_system_prompt(team: Team, role: Role, call: str = CallKind.WORK, *, private_only: bool = False) -> str:
    """The role and the one reply shape this call needs (the paper order's system prompt)."""
    return worker_intro(team, role) + reply_shape(team, role, call, private_only=private_only)


def manager_system_prompt(team: Team) -> str:
    workers = ", ".join(w.name for w in team.workers)
    manager = team.manager
    # A user team's Manager brings its own words; the built-in teams' bar is their completion rule.
    own = f"Your role: {manager.description}\n" if team.custom_name and manager.description else ""
    return (
        f"You are {manager.name}, the Workflow Orchestrator of a team ({workers}) solving one {team.name} "
        "problem in rounds. After each round you read the team's public outputs and either set the next "
        "round's goal or end the run with the final answer.\n"
        f"{own}{team.completion_rule}\n{_STRICT}\nUse exactly this shape:\n{_MANAGER_SCHEMA}\n{_SLOTS_NOTE}"
    )


def plan_request(problem: str, max_rounds: int) -> str:
    return (
        f"PROBLEM:\n{problem}\n\n"
        f"The team has at most {max_rounds} rounds. Set the goal for round 1 (terminate must be false)."
    )


def _context_block(memory: str, inbox: str) -> str:
    parts = []
    if memory:
        parts.append(f"YOUR MEMORY (earlier rounds):\n{memory}")
    if inbox:
        parts.append(f"MESSAGES ROUTED TO YOU THIS ROUND:\n{inbox}")
    return "\n\n".join(parts)


WORKER_ASKS: dict[str, str] = {  # a worker call's instruction, by call kind (a CallKind is its text)
    CallKind.WORK: "Do your part of this round's goal. Reply with the full work JSON.",
    CallKind.SINGLE_PASS: "Do your part of this round's goal. Reply with the full work JSON, including query "
    "and key for the next routing.",
    CallKind.DESCRIPTORS: "Solve nothing yet: state only what you need (query) and can provide (key) for "
    "this round's goal.",
}


def worker_request(
    call: str, role: str, round_no: int, problem: str, goal: str, memory: str, inbox: str, digest: bool = True
) -> str:
    """The user message in the paper order: the problem, this round's goal, memory, inbox, the ask."""
    context = _context_block(memory, inbox)
    # One sentence of needs and offers: the goal and memory carry the detail.
    if call == CallKind.DESCRIPTORS and digest:
        problem = problem_digest(problem)
    return (
        f"PROBLEM:\n{problem}\n\nROUND {round_no} GOAL:\n{goal}\n\n"
        + (f"{context}\n\n" if context else "")
        + WORKER_ASKS[call]
    )


def worker_messages(
    team: Team,
    role: Role,
    call: str,
    *,
    round_no: int,
    problem: str,
    goal: str,
    memory: str,
    inbox: str,
    private_only: bool = False,
    order: str = PromptOrder.CACHE,
    suffix: str = "",
    digest: bool = True,
) -> list[dict[str, str]]:
    """A worker call's messages. ``suffix`` ends the user message (e.g. Qwen3's " /no_think"); ``digest``: a
    descriptor call shows the problem's opening only (problem_digest), else the whole problem.

    In the cache order the user message runs: problem, memory (oldest first, as it arrived), this round's goal,
    the inbox, the ask. The system prompt is the role and, for a single-pass call (an agent's only call kind,
    the same every round), its reply shape; phased descriptor and work calls alternate, so each one's shape
    ends its user message: shown the same state (``digest`` False), a round's work call begins with its
    descriptor call up to the ask. Each round's prompt begins with the previous round's up to that round's
    goal."""
    if order == PromptOrder.PAPER:
        return [
            {"role": "system", "content": worker_system_prompt(team, role, call, private_only=private_only)},
            {"role": "user", "content": worker_request(call, role.name, round_no, problem, goal, memory, inbox, digest)
             + suffix},
        ]
    shape = reply_shape(team, role, call, private_only=private_only)
    if call == CallKind.SINGLE_PASS:  # the agent's only call kind: its shape is the same every round
        system, shape = worker_intro(team, role) + shape, ""
    else:  # phased descriptor and work calls alternate: each one's shape comes last, after what they share
        system = worker_intro(team, role).rstrip("\n")
    if call == CallKind.DESCRIPTORS and digest:
        problem = problem_digest(problem)
    parts = [f"PROBLEM:\n{problem}"]
    if memory:
        parts.append(f"YOUR MEMORY (earlier rounds):\n{memory}")
    parts.append(f"ROUND {round_no} GOAL:\n{goal}")
    if inbox:
        parts.append(f"MESSAGES ROUTED TO YOU THIS ROUND:\n{inbox}")
    parts.append(WORKER_ASKS[call])
    if shape:
        parts.append(shape)
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join(parts) + suffix},
    ]


DIGEST_CHARS = 320


def problem_digest(problem: str, limit: int = DIGEST_CHARS) -> str:
    """The problem's opening, cut at a line end within ``limit`` characters (phase A's descriptor calls
    state needs and offers for the round's goal; the work call that follows carries the whole problem)."""
    text = problem.strip()
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    head = text[: cut if cut > limit // 2 else limit].rstrip()
    return f"{head}\n[… the rest of the problem comes with your work call]"


def manager_request(round_no: int, max_rounds: int, problem: str, goal: str, outputs: str, extra: str = "") -> str:
    return f"PROBLEM:\n{problem}\n\n" + manager_turn(round_no, max_rounds, goal, outputs, extra)


def manager_turn(round_no: int, max_rounds: int, goal: str, outputs: str, extra: str = "") -> str:
    """The Manager's review of a round without the problem (a conversation's preamble holds it)."""
    last = round_no >= max_rounds
    return (
        f"ROUND {round_no} GOAL:\n{goal}\n\n"
        f"TEAM OUTPUTS THIS ROUND:\n{outputs}\n\n"
        + (f"{extra}\n\n" if extra else "")
        + (
            "This was the last round: terminate and give the best final answer."
            if last
            else f"Round {round_no} of at most {max_rounds}. Continue with a new goal or terminate."
        )
    )


JSON_REPLY = "ONLY the JSON object in the required shape"


def repair_request(error: str, reply_format: str = JSON_REPLY) -> str:
    """The re-ask after an unusable reply: what was wrong, and the format this call's role must write
    (each parser names its own: a JSON object with its fields, a YAML plan, tagged plain text)."""
    return f"{REPAIR_OPENING} {error}. Reply again with {reply_format}."


REPAIR_OPENING = "Your previous reply could not be used:"  # how a re-ask begins (the scripted server reads it)


# --- the growing conversation (PromptOrder.CONVERSATION) ----------------------------------------------------------
MEMORY_NEW = "SINCE YOUR LAST TURN:"

# A conversation's turns end with a short ask naming the call kind: the reply shapes are in the system
# prompt (worker_role: "When asked for your descriptors: ..."), and every turn stays in every later request,
# so a long ask would be sent again each round (issue 46: what is sent may grow by the earlier goals only).
TURN_ASKS: dict[str, str] = {
    CallKind.WORK: "Now your work.",
    CallKind.SINGLE_PASS: "Now your work, with the next query and key.",
    CallKind.DESCRIPTORS: "Now your descriptors only (query and key); solve nothing yet.",
}


def team_preamble(team: Team, problem: str) -> str:
    """What every agent's conversation begins with, byte for byte the same for the whole team: the problem,
    the team and the rules of a round (DyTopo, arXiv 2602.06039 §3: a Manager's goal, each worker's need and
    offer, routing, work, the Manager's review)."""
    manager = team.manager
    lineup = ", ".join(r.name for r in (manager, *team.workers))  # each role's title comes with its own role
    # As short as the per-request intro it replaces (issue 46: what is sent may grow by the earlier goals only).
    # "solving one <domain> problem" is also how the scripted server tells a run's domain (core.runtime.scripted).
    return (
        f"PROBLEM:\n{problem.strip()}\n\nTHE TEAM: {lineup}, solving one {team.name} problem in rounds. Each round "
        f"{manager.name} sets a goal; workers say what they need (query) and offer (key), are routed by them, then "
        f"work.\n{_STRICT}\n"
    )


def worker_role(team: Team, role: Role, calls: tuple[str, ...], *, private_only: bool = False) -> str:
    """The part of a worker's system prompt after the preamble: who it is and the reply shape of each call
    kind it gets (all of them here, once: the turns only name which one they ask for)."""
    head = f"You are {role.name}, the {role.title}. Your role: {role.description}\n"
    if len(calls) == 1:
        return head + reply_shape(team, role, calls[0], private_only=private_only)
    # Each shape, and the notes they share once (the system prompt is in every request).
    shapes = [f"When asked for {_CALL_NAMES[c]}: " + reply_shape(team, role, c, private_only=private_only).split(
        f"\n{_SLOTS_NOTE}")[0] for c in calls]
    return head + "\n".join(shapes) + f"\n{_SLOTS_NOTE} {_SPECIFIC}"


_CALL_NAMES: dict[str, str] = {
    CallKind.DESCRIPTORS: "your descriptors", CallKind.WORK: "your work", CallKind.SINGLE_PASS: "your work"}


def manager_role(team: Team) -> str:
    """The Manager's part of its system prompt after the preamble (manager_system_prompt's content)."""
    manager = team.manager
    own = f"Your role: {manager.description}\n" if team.custom_name and manager.description else ""
    return (
        f"You are {manager.name}, the Workflow Orchestrator.\n{own}{team.completion_rule}\n"
        f"Use exactly this shape:\n{_MANAGER_SCHEMA}\n{_SLOTS_NOTE}"
    )


def worker_turn(call: str, round_no: int, goal: str, memory: str, inbox: str, *, new_goal: bool = True,
                first: bool = False) -> str:
    """One user turn of a worker's conversation: what arrived since its last turn (routed messages, test
    results, notes), the round's goal (once per round), this call's inbox and its ask."""
    parts = []
    if memory:
        parts.append(f"{'YOUR MEMORY (earlier rounds):' if first else MEMORY_NEW}\n{memory}")
    if new_goal:
        parts.append(f"ROUND {round_no} GOAL:\n{goal}")
    if inbox:
        parts.append(f"MESSAGES ROUTED TO YOU THIS ROUND:\n{inbox}")
    parts.append(TURN_ASKS[call])
    return "\n\n".join(parts)


def plan_turn(max_rounds: int) -> str:
    """The Manager's first turn (the problem is in the preamble)."""
    return f"The team has at most {max_rounds} rounds. Set the goal for round 1 (terminate must be false)."
