"""Where this debate departs from Du et al. (arXiv 2305.14325); `swarm-tui strategies --fidelity` lists it."""

from __future__ import annotations

from core.methods.registry import Deviation

NAME = "llm-debate"

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        NAME,
        "Every debater reads every other debater's whole latest answer each round.",
        "The paper's main setting (3 agents, 2 rounds); its summarised variant for many agents is not built.",
        default_is_paper=True,
    ),
    Deviation(
        NAME,
        "The final answer is the majority of the last round's answers (math by equivalence, code by its code, "
        "other text as written); a tie goes to the lowest-numbered debater.",
        "The paper reports the agents' final agreement without saying how a split is settled.",
    ),
)
