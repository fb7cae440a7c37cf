"""What a DMoA step hands to the next (Wu et al., arXiv 2605.15706, Alg. 2): P_last, the responses of the
routed agents that answered; X_{i+1} (eq. 7 / 9); and who sent them with which alpha (the drawn hand-off)."""

from __future__ import annotations

from dataclasses import dataclass

from core.lazy import numpy as np  # loaded at first use: after the first request (core.lazy)


@dataclass
class StepState:
    """What a finished step leaves for the next one."""

    responses: list[tuple[str, str]]  # (agent, text) of the routed agents that answered: P_last
    x_next: np.ndarray
    senders: list[str]
    sender_alpha: list[float]
