"""DMoA's prompts (Differentiable Mixture-of-Agents, Wu et al., arXiv 2605.15706): the routed pool, each
agent's system prompt and request, the Summarizer's and the *w LLM Selector* ablation's, and the
Selector's reply. In our own words; the paper's App. A.3 says what each must convey.

Each agent's system prompt holds its profile and the user query, P_sys = (Profile, P_usr) (§3.1); its
user message holds the previous step's responses (``query_in = "user"`` moves the query there instead).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from core.runtime.context import Messages, Shrink, shrink_pieces
from core.runtime.copies import folded_slots, is_slot
from core.runtime.parsing import ParseError, TemplateCopied, extract_json_object
from core.runtime.rosters import Team


class QueryPlace(StrEnum):
    """Where an agent's query goes: in the system prompt (the paper: P_sys = (Profile, P_usr)) or the user turn."""

    SYSTEM = "system"
    USER = "user"


QUERY_IN = tuple(QueryPlace)


@dataclass(frozen=True)
class PoolAgent:
    name: str
    title: str
    profile: str


def dmoa_pool(team: Team) -> list[PoolAgent]:
    """The routed pool: the domain's workers (the Manager model serves as Summarizer and Selector).
    Every size works: the router's head has one logit per agent, K adapts to N."""
    return [PoolAgent(w.name, w.title, w.description) for w in team.workers]


_ANSWER_FORMAT = {
    "code": "A [FINAL] answer is the complete solution code in one ```python block (the full function "
    "definitions with their imports).",
    "math": "A [FINAL] answer is the final result only, as short as possible (LaTeX allowed), for example "
    "[FINAL] \\frac{14}{3}.",
    "general": "A [FINAL] answer is the complete, direct answer to the question.",
}

_AGENT_STYLE = {
    "code": "When you write code, give all of it in one ```python block.",
    "math": "Show the key steps and state every result you reach plainly.",
    "general": "Be specific and give your reasons.",
}


def agent_system_prompt(domain: str, agent: PoolAgent, problem: str | None = None) -> str:
    """The agent's system prompt. With ``problem`` it is P_sys = (Profile, P_usr) as the paper builds it
    (§3.1): the user query sits in the system prompt beside the profile."""
    profile = (
        f"You are {agent.name}, the {agent.title}: one expert of a pool solving one {domain} problem in "
        "steps. At each step a router picks a few experts; the experts it picks next read what you write.\n"
        f"Your role: {agent.profile}\n"
        "You have no tools in this run: reason in text. Give a concise, careful intermediate result that "
        f"moves the solution forward and that the next experts can build on. {_AGENT_STYLE.get(domain, '')}"
    )
    return profile if problem is None else f"{profile}\n\nPROBLEM:\n{problem}"


def _numbered(responses: Sequence[tuple[str, str]]) -> str:
    return "\n\n".join(f"{i}. [{name}]\n{text}" for i, (name, text) in enumerate(responses, start=1))


def agent_request(
    name: str, step: int, problem: str | None, previous: Sequence[tuple[str, str]], feedback: str = ""
) -> str:
    """The agent's user message: the previous step's responses (P_last) and test results; the problem too
    unless it is in the system prompt (``problem`` None)."""
    parts = [] if problem is None else [f"PROBLEM:\n{problem}"]
    if previous:
        parts.append(f"{_READ_PREVIOUS}\n\nRESPONSES FROM STEP {step - 1}:\n{_numbered(previous)}")
    if feedback:
        parts.append(f"TEST RESULTS (the sandbox ran the latest code):\n{feedback}")
    parts.append(agent_ask(step, bool(previous)))
    return "\n\n".join(parts)


_READ_PREVIOUS = (
    "The experts of the previous step answered below. Read them critically: keep what is reliable, correct what "
    "is wrong and carry the reasoning on from where it stands. Repeat earlier content only to correct or combine it."
)


def agent_ask(step: int, has_previous: bool) -> str:
    """What an agent is asked to do at ``step`` (the last part of its request)."""
    if has_previous:
        return f"Give your contribution to step {step} from your role."
    return "You are among the first experts on this problem. Give your contribution from your role."


def agent_instructions(domain: str, agent: PoolAgent, step: int, has_previous: bool) -> list[str]:
    """The app's own words in an agent's request (never the problem nor a teammate's response): a reply that
    only repeats them copied its instructions (issue 44, core.runtime.parsing.own_text)."""
    return [agent_system_prompt(domain, agent), _READ_PREVIOUS, agent_ask(step, has_previous)]


def summarizer_system_prompt(domain: str) -> str:
    return (
        f"You are the Summarizer of a pool of experts solving one {domain} problem in steps. After each "
        "step you read the problem and the responses of that step's experts, then decide. If they already "
        "settle the answer reliably, reply with the tag [FINAL] followed by the complete final answer. "
        "Otherwise reply with the tag [CONTINUE] followed by one or two sentences on what is still "
        "missing or doubtful. Begin your reply with exactly one of the two tags.\n"
        f"{_ANSWER_FORMAT.get(domain, _ANSWER_FORMAT['general'])}"
    )


def summarizer_request(
    step: int, l_max: int, problem: str | None, responses: Sequence[tuple[str, str]], feedback: str = ""
) -> str:
    """The Summarizer's request; without ``problem`` when its conversation already holds it."""
    parts = [] if problem is None else [f"PROBLEM:\n{problem}"]
    parts.append(
        f"RESPONSES FROM STEP {step}:\n{_numbered(responses) if responses else '(no expert answered this step)'}")
    if feedback:
        parts.append(f"TEST RESULTS (the sandbox ran the latest code):\n{feedback}")
    parts.append(summarizer_ask(step, l_max))
    return "\n\n".join(parts)


def summarizer_ask(step: int, l_max: int) -> str:
    if step >= l_max:
        return f"This is the last step ({l_max}). Reply with [FINAL] and the best final answer these responses support."
    return f"Step {step} of at most {l_max}. Reply with [FINAL] and the answer, or with [CONTINUE]."


def summarizer_instructions(domain: str, step: int, l_max: int) -> list[str]:
    """The app's own words in the Summarizer's request: a reply that only repeats them is a copy (issue 44)."""
    return [summarizer_system_prompt(domain), summarizer_ask(step, l_max)]


def selector_system_prompt(domain: str, pool: Sequence[PoolAgent], k_max: int) -> str:
    roster = "\n".join(f"- {a.name} ({a.title}): {a.profile}" for a in pool)
    return (
        f"You are the Selector of a pool of experts solving one {domain} problem in steps. Before each step "
        f"you choose which experts work on it: at most {k_max}, the fewest that can move the solution on, "
        "and how much each one's answer should weigh.\n"
        f"The pool:\n{roster}\n\n"
        "Reply with ONLY one JSON object and nothing else, in exactly this shape:\n"
        f'{{"agents": ["{NAME_SLOT}", ...], "weights": {{"{NAME_SLOT}": {WEIGHT_SLOT}, ...}}}}'
    )


# The Selector's shape is made of slots (as it always was); a reply that names a slot instead of an expert
# copied the shape (issue 44: core.runtime.copies).
NAME_SLOT = "<Name>"
WEIGHT_SLOT = "<a positive number>"
_SLOTS = folded_slots((NAME_SLOT, WEIGHT_SLOT, "an expert's name"))


def selector_request(step: int, problem: str | None, previous: Sequence[tuple[str, str]], k_max: int) -> str:
    """The Selector's request; without ``problem`` when its conversation already holds it."""
    parts = [] if problem is None else [f"PROBLEM:\n{problem}"]
    if previous:
        parts.append(f"RESPONSES FROM STEP {step - 1}:\n{_numbered(previous)}")
    parts.append(f"Choose up to {k_max} experts for step {step}.")
    return "\n\n".join(parts)


def parse_selection(text: str, names: Sequence[str], k_max: int) -> list[tuple[str, float]]:
    """The Selector's reply: up to K (name, weight) pairs, strongest first, weights summing to 1.
    Names match without regard to case; unknown names are dropped; missing weights count as equal.
    ParseError (one line) when nothing usable is left."""
    found = extract_json_object(text)
    agents = found.get("agents")
    if not isinstance(agents, list) or not agents:
        raise ParseError('"agents" must be a non-empty list of expert names')
    copied = [str(item) for item in agents if is_slot(str(item), _SLOTS) or str(item).strip(" .") == ""]
    if copied and len(copied) == len(agents):
        raise TemplateCopied(["agents"], "name the experts of the pool you choose")
    by_lower = {n.lower(): n for n in names}
    raw_weights = found.get("weights")
    if not isinstance(raw_weights, dict):
        raw_weights = {}
    weights = {str(k).strip().lower(): v for k, v in raw_weights.items()}
    chosen: list[tuple[str, float]] = []
    for item in agents:
        name = by_lower.get(str(item).strip().lower())
        if name is None or any(name == c for c, _ in chosen):
            continue
        value = weights.get(name.lower(), 1.0)
        try:
            weight = float(value)
        except (TypeError, ValueError):
            weight = 1.0
        if not math.isfinite(weight) or weight <= 0:
            weight = 1.0
        chosen.append((name, weight))
    if not chosen:
        raise ParseError(f"no known expert named in \"agents\" (the pool: {', '.join(names)})")
    order = {name: i for i, (name, _) in enumerate(chosen)}
    chosen.sort(key=lambda pair: (-pair[1], order[pair[0]]))
    chosen = chosen[: max(1, k_max)]
    total = sum(w for _, w in chosen)
    return [(name, w / total) for name, w in chosen]


def fitted(
    responses: Sequence[tuple[str, str]], make: Callable[[list[tuple[str, str]]], Messages]
) -> tuple[Messages, Shrink]:
    """A prompt ``make`` builds around one step's responses, and how to fit it to the model's context: the
    responses are all of one step (P_last), so each is cut to an equal share (core.runtime.context)."""
    names = [name for name, _ in responses]

    def build(_: list[str], texts: list[str]) -> Messages:
        return make(list(zip(names, texts, strict=True)))

    texts = [text for _, text in responses]
    return build([], texts), shrink_pieces(build, [], texts)
