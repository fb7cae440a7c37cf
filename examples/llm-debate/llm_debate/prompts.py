"""What a debater is asked (Du et al., arXiv 2305.14325, §2: first an independent answer, then, each round,
the other agents' latest answers with a request to reconsider). The wording is this package's own."""

from __future__ import annotations

CALL_ANSWER = "debate-answer"  # round 1: each debater answers on its own
CALL_UPDATE = "debate-update"  # later rounds: it reads the others' latest answers and updates its own
CALLS = (CALL_ANSWER, CALL_UPDATE)

PROBLEM_MARK = "PROBLEM:\n"  # where the problem starts in the first user message (the bench script finds it)

_FORMAT = {
    "code": "Put the complete solution (the whole function, with the imports it needs) in one ```python fenced "
    "block.",
    "math": "Show the key steps briefly, then give the final answer as \\boxed{...}.",
    "general": "Reason briefly, then give a direct, complete answer.",
}


def debater_names(count: int) -> list[str]:
    return [f"Debater{number}" for number in range(1, count + 1)]


def system_prompt(name: str, count: int, domain: str) -> str:
    """The debater's standing instructions (the domain phrase is what the scripted server reads)."""
    return (
        f"You are {name}, one of {count} agents solving one {domain} problem by debate. Work the problem out "
        "yourself; when you see the other agents' answers, weigh them on their merits, neither deferring to "
        f"the majority nor defending a mistake. {_FORMAT.get(domain, _FORMAT['general'])}"
    )


def first_request(problem: str, note: str = "") -> str:
    return "\n\n".join(part for part in (f"{PROBLEM_MARK}{problem}", "Give your answer.", note) if part)


def update_request(problem: str, own: str, others: dict[str, str], round_no: int, note: str = "") -> str:
    """Round ``round_no`` (2 on): the debater's own latest answer and every other debater's."""
    shown = "\n\n".join(f"[{name}]\n{text.strip() or '(no answer)'}" for name, text in others.items())
    return "\n\n".join(part for part in (
        f"{PROBLEM_MARK}{problem}",
        f"Your answer so far:\n{own.strip() or '(you gave none)'}",
        f"The other agents' latest answers (round {round_no - 1}):\n\n{shown}",
        "Check each of their arguments against yours. Correct your answer where theirs shows a mistake, keep it "
        "where it holds, and give your updated answer in full.",
        note,
    ) if part)


def note_block(notes: list[str]) -> str:
    """The user's notes for one call, after its request ("" when there are none)."""
    return "\n\n".join(f"A NOTE FROM the person running this debate:\n{text}" for text in notes)
