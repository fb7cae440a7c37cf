"""TopoDIM's prompts: the roles that fill its team of five, what each call mode asks an agent, the prior
generator's request for a typed graph and the decision-maker's (TopoDIM, Sun et al., §3.2 and Fig. 13;
the prompts are in our own words). A teammate's text is quoted clipped, smaller when a prompt must fit
the model's context (clip_shrink).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from core.routing.topodim import CallMode, CallStep
from core.runtime.context import Messages, Shrink, prompt_chars
from core.runtime.rosters import Role, Team

MARK = "one-shot typed interaction graph"  # in every system prompt, so scripts can tell our calls apart
PEER_CHARS = 8000  # at most this much of one teammate's answer is quoted in another's prompt
MIN_PEER_CHARS = 200  # the least of it quoted when the prompt must fit a small context

# TopoDIM runs with five agents (§4.1). The domains' teams have three or four workers; these roles fill
# a team up, taken in order (the code ones from the paper's code roster, App. G; the others from its
# general pool).
EXTRA_ROLES: dict[str, tuple[Role, ...]] = {
    "code": (
        Role(
            "BugFixer",
            "Bug Fixer",
            "Find the defects in the code at hand, say what is wrong and give a corrected, complete version.",
            "I need the current implementation and the failing cases.",
            "I provide a corrected implementation and the list of defects fixed.",
        ),
        Role(
            "ProjectManager",
            "Project Manager",
            "Turn the task into requirements and acceptance checks; keep the solution simple and complete.",
            "I need the task and the team's drafts.",
            "I provide the requirements and the acceptance checks.",
        ),
    ),
    "math": (
        Role(
            "Mathematician",
            "Mathematician",
            "Solve the problem independently, by another route when there is one, and compare the results.",
            "I need the problem and the team's derivation to compare with.",
            "I provide an independent derivation and its result.",
        ),
        Role(
            "Programmer",
            "Programmer",
            "Check the numbers as a program would: enumerate small cases, compute exactly, report the value.",
            "I need the quantities to compute.",
            "I provide exact computed values for the quantities in question.",
        ),
        Role(
            "Critic",
            "Critic",
            "Find the step most likely to be wrong: a dropped case, a sign, a claim without justification.",
            "I need a derivation to scrutinise.",
            "I provide the weakest steps of a derivation and why.",
        ),
    ),
    "general": (
        Role(
            "Expert",
            "Knowledgeable Expert",
            "Bring the facts and the established practice that bear on the question.",
            "I need the question's scope.",
            "I provide the relevant facts and practice.",
        ),
        Role(
            "Economist",
            "Economist",
            "Weigh costs, benefits and incentives, with rough numbers where they help.",
            "I need the options to weigh.",
            "I provide a cost-benefit view of the options.",
        ),
        Role(
            "Historian",
            "Historian",
            "Recall how similar decisions played out before and what that teaches.",
            "I need the decision at hand.",
            "I provide precedents and their lessons.",
        ),
    ),
}

_FORMAT = {
    "code": "Write plain text, not JSON. Whenever you give code, give the complete solution (every function "
    "it needs, with its imports) in one ```python block.",
    "math": "Write plain text, not JSON. Reason step by step and end every answer with the final result as "
    "\\boxed{...}.",
    "general": "Write plain text, not JSON. Be concrete and brief, and end with your conclusion.",
}
_FINAL_FORMAT = {
    "code": "Give the final solution as complete code (every function with its imports) in one ```python block.",
    "math": "End with the final answer alone as \\boxed{...}.",
    "general": "Give one complete, direct final answer.",
}


def team_roles(team: Team, size: int) -> list[Role]:
    """The first ``size`` of the domain's workers followed by TopoDIM's extra roles."""
    return [*team.workers, *EXTRA_ROLES.get(team.name, ())][:size]


def clip(text: str, limit: int = PEER_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… (cut: {len(text) - limit} more characters)"


def clip_shrink(make: Callable[[int], Messages]) -> Shrink:
    """TopoDIM's own rule for a prompt over the model's context: every teammate's text it quotes is clipped
    (clip) to one smaller limit, the largest that fits; None when even the smallest does not shrink it."""
    def shrink(most_chars: int) -> Messages | None:
        low, high = MIN_PEER_CHARS, PEER_CHARS
        best = make(low)
        if prompt_chars(best) >= prompt_chars(make(PEER_CHARS)):
            return None
        while low < high:  # the largest limit whose prompt fits
            middle = (low + high + 1) // 2
            candidate = make(middle)
            if prompt_chars(candidate) <= most_chars:
                low, best = middle, candidate
            else:
                high = middle - 1
        return best

    return shrink


def system_prompt(role: Role, names: list[str], domain: str) -> str:
    """An agent's system prompt: its role, its teammates and the reply format of the domain."""
    mates = ", ".join(n for n in names if n != role.name)
    return (
        f"You are {role.name}, the {role.title}, in a team of {len(names)} agents solving one "
        f"{domain} problem in a single pass over a {MARK} (TopoDIM). Teammates: {mates}.\n"
        f"Your role: {role.description}\n"
        "Each request says what you do in it: answer the task, build on teammates' answers, review an "
        "answer, revise yours after a review, challenge an answer, or defend yours.\n"
        f"{_FORMAT.get(domain, _FORMAT['general'])}"
    )


def peer(roles: Mapping[str, Role], name: str, text: str, note: str = "", limit: int = PEER_CHARS) -> str:
    """A teammate's text as quoted in a prompt: who wrote it (and how it came about), then the text, clipped."""
    role = roles.get(name)
    title = f", the {role.title}" if role else ""
    return f"[{name}{title}{note}]\n{clip(text, limit)}"


def user_prompt(problem: str | None, body: str, ask: str) -> str:
    """An agent's request; without ``problem`` when its conversation already holds it."""
    return f"{'' if problem is None else f'PROBLEM:{chr(10)}{problem}{chr(10)}{chr(10)}'}{body}{ask}"


def request(
    step: CallStep,
    answers: dict[str, str],
    reviews: dict[tuple[str, str], str],
    debates: dict[tuple[str, str], list[str]],
    inputs: dict[str, list[str]],
    roles: Mapping[str, Role],
    limit: int = PEER_CHARS,
) -> tuple[str, str, str]:
    """(context blocks, the ask, what is missing so the call cannot be made). ``limit``: the most of one
    teammate's text quoted (clip), smaller when the prompt must fit the model's context."""
    agent, partner = step.agent, step.partner
    if step.mode == CallMode.SOLUTION:
        blocks = []
        given = [peer(roles, src, answers[src], limit=limit) for src in inputs[agent] if answers.get(src)]
        if given:
            blocks.append("ANSWERS YOU BUILD ON (conditioned inputs):\n" + "\n\n".join(given))
        for (src, challenger), turns in debates.items():
            if challenger == agent:
                claim, challenge, *defence = [*turns, ""]
                blocks.append(
                    f"YOUR DEBATE WITH {src}:\n{src}'s answer:\n{clip(claim, limit)}\n\n"
                    f"Your challenge:\n{clip(challenge, limit)}\n\n"
                    f"{src}'s reply:\n{clip(defence[0], limit) or '(no reply)'}"
                )
        ask = (
            "Solve the problem from your role's angle. Use what your teammates gave you where it is right "
            "and fix it where it is not."
            if blocks
            else "Solve the problem from your role's angle."
        )
        return "".join(f"{b}\n\n" for b in blocks), ask, ""
    if step.mode == CallMode.EVALUATE:
        if not answers.get(partner):
            return "", "", f"{partner} has no answer to review"
        return (
            f"ANSWER TO REVIEW:\n{peer(roles, partner, answers[partner], limit=limit)}\n\n",
            "Review this answer for correctness and completeness. Name each concrete error and what should "
            "change; do not rewrite the whole answer.",
            "",
        )
    if step.mode == CallMode.REVISE:
        review = reviews.get((agent, partner))
        if not review or not answers.get(agent):
            return "", "", f"no review from {partner} to revise with"
        return (
            f"YOUR ANSWER:\n{clip(answers[agent], limit)}\n\n"
            f"REVIEW FROM {peer(roles, partner, review, limit=limit)}\n\n",
            "Revise your answer where the review is right (say briefly where you disagree) and give your "
            "complete revised answer.",
            "",
        )
    if step.mode == CallMode.CHALLENGE:
        if not answers.get(partner):
            return "", "", f"{partner} has no answer to challenge"
        return (
            f"ANSWER TO CHALLENGE:\n{peer(roles, partner, answers[partner], limit=limit)}\n\n",
            "Challenge it: point at its weakest step or assumption and give a counter-example or a better "
            "alternative. Be specific.",
            "",
        )
    if step.mode == CallMode.DEFEND:
        debate = debates.get((agent, partner))
        if not debate or not debate[1] or not answers.get(agent):
            return "", "", f"no challenge from {partner} to answer"
        return (
            f"YOUR ANSWER:\n{clip(answers[agent], limit)}\n\n"
            f"CHALLENGE FROM {peer(roles, partner, debate[1], limit=limit)}\n\n",
            "Answer the challenge: defend what holds, correct what does not, and give your complete answer "
            "at the end.",
            "",
        )
    return "", "", f"unknown mode {step.mode}"  # pragma: no cover - schedule() makes only the modes above


def prior_messages(
    decider: str, roles: Mapping[str, Role], domain: str, problem: str, edge_types: list[str]
) -> Messages:
    """The prior generator's one call (§3.2 "initialized by an advanced LLM"): the Manager proposes typed
    edges, each with its confidence (p for eq. 8)."""
    team = "\n".join(f"- {r.name} ({r.title}): {r.description}" for r in roles.values())
    allowed = ", ".join(edge_types)
    return [
        {
            "role": "system",
            "content": f"You are {decider}, the coordinator of a team of {len(roles)} agents solving "
            f"one {domain} problem in a single pass over a {MARK} (TopoDIM). Before anyone "
            "works, you decide once how the agents interact. Reply with ONLY one valid JSON object, no "
            "prose and no Markdown fences.",
        },
        {
            "role": "user",
            "content": f"PROBLEM:\n{problem}\n\n"
            f"TEAM, in this order:\n{team}\n\n"
            "LINK TYPES (A->B):\n"
            "- conditioned: B answers after A and builds on A's answer.\n"
            "- feedback: B reviews A's answer, then A revises it.\n"
            "- debate: B challenges A's answer, A defends it, and B answers later with the debate in mind.\n"
            f"Use only these types: {allowed}. Conditioned and debate links must not form a cycle. "
            "An agent with no link does not work on this problem, so link only the agents that help.\n\n"
            "Give each link your confidence from 0 to 1 that it helps. Reply with exactly this shape:\n"
            f'{{"edges": [{{"src": "{SRC_SLOT}", "dst": "{DST_SLOT}", "type": "{TYPE_SLOT}", '
            f'"confidence": {CONFIDENCE_SLOT}}}]}}\n'
            "Write your own value in place of every <...> slot; a reply that repeats a slot is refused.",
        },
    ]


# The prior's edge shape is made of slots (issue 44): a copy of it names no agent and gives itself away
# (core.runtime.copies); the former example ("AgentName", "conditioned", 0.8) could pass for a proposal.
SRC_SLOT = "<the agent whose answer the link starts from>"
DST_SLOT = "<the agent the link leads to>"
TYPE_SLOT = "<one of the link types>"
CONFIDENCE_SLOT = "<your confidence, 0 to 1>"
PRIOR_SLOTS = (SRC_SLOT, DST_SLOT, TYPE_SLOT, CONFIDENCE_SLOT, "AgentName")


def agent_instructions(role: Role, names: list[str], domain: str, ask: str) -> list[str]:
    """The app's own words in an agent's request (never the problem nor a teammate's quoted text): a reply that
    only repeats them copied its instructions (issue 44, core.runtime.parsing.own_text)."""
    return [system_prompt(role, names, domain), ask]


def decider_instructions(messages: Messages) -> list[str]:
    """The decision-maker's own instructions: its system prompt and the request's last line (the ask)."""
    return [messages[0]["content"], messages[-1]["content"].rsplit("\n", 1)[-1]]


def decider_messages(decider: str, size: int, domain: str, problem: str, peers: str, count: int,
                     checks: str) -> Messages:
    """The decision-maker's final call (Fig. 13): every kept agent's latest answer, and the sandbox's
    verdicts on the candidates when it ran them."""
    return [
        {
            "role": "system",
            "content": f"You are {decider}, the decision-maker of a team of {size} agents "
            f"solving one {domain} problem in a single pass over a {MARK} (TopoDIM). You read every answer "
            "the team produced and write the final answer. Think critically: the majority can be wrong, and "
            f"a review or a debate may have exposed an error.\n"
            f"{_FINAL_FORMAT.get(domain, _FINAL_FORMAT['general'])}",
        },
        {
            "role": "user",
            "content": f"PROBLEM:\n{problem}\n\n"
            f"THE TEAM'S ANSWERS ({count} agents):\n{peers or '(no answers)'}\n\n{checks}"
            "Weigh these answers and write the final answer to the problem.",
        },
    ]
