"""Where DMoA (arXiv 2605.15706) departs from its paper.

core.methods.fidelity collects every method's list (MethodInfo.fidelity).
"""

from __future__ import annotations

from core.methods.registry import Deviation

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "dmoa",
        "The GRU router starts from a seeded initialisation until `swarm-tui train dmoa` (or -o ttt=N) "
        "trains it; the paper routes with a trained router.",
        "Training needs an endpoint that returns logprobs and a dataset slice; it is one command away.",
        "swarm-tui train dmoa DATASET (or -o ttt=40)",
        ("ttt", "40"),
    ),
    Deviation(
        "dmoa",
        "Each agent's system prompt holds its profile and the problem, P_sys = (Profile, P_usr).",
        "The paper's prompt layout. query_in=user moves the problem to the user message.",
        "-o query_in=system (the default)",
        ("query_in", "system"),
        default_is_paper=True,
    ),
    Deviation(
        "dmoa",
        "Eq. 13's inner sum runs over the top-k logprobs the server returns (top_logprobs, 5), renormalised, "
        "not over the whole vocabulary.",
        "OpenAI-compatible servers return at most 20 alternatives per token; the tail carries little mass.",
        "-o top_logprobs=20 (the closest a server allows)",
        ("top_logprobs", "20"),
    ),
    Deviation(
        "dmoa",
        "Where the paper is silent: P_last is empty at step 1, the routed agents run in parallel, and an agent "
        "that gave no text drops out of X_{i+1} with alpha renormalised over the others.",
        "Readings of Alg. 2 (the prompts of §3 and App. A.3), listed in core/methods/dmoa/method.py.",
    ),
    Deviation(
        "dmoa",
        "Eq. 13 averages the entropy over the generated tokens that came with a logprob; a token the server "
        "sent none for is left out of M.",
        "Nothing is known of that token's distribution; counting it as 0 would make a terse server look certain.",
    ),
    Deviation(
        "dmoa",
        "A reply that only repeats its instructions (an agent's, the Summarizer's) or names the Selector "
        "shape's <Name> slot instead of experts is asked for once more, then counted as copied: it is not "
        "aggregated into X_{i+1}, not read by the next step and never the answer. The prompts' wording is "
        "unchanged.",
        "Small local models repeat what they were told (issue 44); such a reply is nobody's work.",
    ),
    Deviation(
        "dmoa",
        "Each caller keeps one growing conversation: a pool agent routed again, the Summarizer and the Selector "
        "append each step's request (the previous step's responses and the ask) and their kept reply; the problem "
        "is said once. What it adds to the paper's prompt: the caller's own earlier steps (their requests and "
        "replies); the paper shows only P_last. Re-asks stay out; an overgrown conversation drops its oldest "
        "exchanges in one step (MemoryTrimmed).",
        "Each request then begins with the previous one, so a server's prefix cache prefills only what is new "
        "(issue 46).",
        "-o prompt_order=paper",
        ("prompt_order", "paper"),
    ),
)
