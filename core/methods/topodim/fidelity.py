"""Where TopoDIM departs from its paper.

core.methods.fidelity collects every method's list (MethodInfo.fidelity).
"""

from __future__ import annotations

from core.methods.registry import Deviation

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "topodim",
        "The default generator is prior: the Manager writes the typed graph with a confidence per edge "
        "(one extra Manager call per problem); the paper's generator is a trained R-GCN policy.",
        "An untrained policy draws noise; the paper initialises from an LLM-written prior graph (§3.2).",
        "swarm-tui train topodim DATASET, then -o generator=policy",
        ("generator", "policy"),
    ),
    Deviation(
        "topodim",
        "Eq. 6's pair order is read as (j = 2..N, i < j), each pair followed by its reverse, so an edge may "
        "point either way; eq. 7's mask removes a conditioned or debate edge that would close a path j ⇝ i.",
        "The paper's equations leave the direction of a pair and the path rule open (TopoDIM §3.2, eq. 6-7).",
    ),
    Deviation(
        "topodim",
        "When eq. 8-9 keep no edge at all, every agent answers alone and the decision-maker merges them "
        "(recorded as a fallback).",
        "Eq. 9 would leave no agent to run; the paper does not cover the empty graph.",
    ),
    Deviation(
        "topodim",
        "The policy's sizes are ours: hidden 32, two R-GCN layers, tanh (the public code: hidden 16).",
        "The paper does not give them; the policy stays small enough to train on a CPU.",
    ),
    Deviation(
        "topodim",
        "The prior generator's edge shape is written with slots (\"<the agent whose answer the link starts "
        "from>\", \"<one of the link types>\", <your confidence, 0 to 1>) and one line saying to write its own "
        "values, instead of a filled example edge; a reply whose every edge is a slot is asked for once more, "
        "then no graph is built from it. An agent's or the decision-maker's reply that only repeats its "
        "instructions is asked for once more, then not passed on (counted as copied).",
        "Small local models copy an example verbatim (issue 44); a slot cannot pass for a proposal. The fields "
        "asked for are the same (src, dst, type, confidence).",
    ),
    Deviation(
        "topodim",
        "An agent called more than once (its answer, then a review's revision or a debate's defence, or a review "
        "before its own answer) keeps one growing conversation: each call appends its request and the kept "
        "reply; the problem is said once. What it adds to the paper's prompt: the agent's own earlier calls of "
        "the pass. The decision-maker's two calls (the prior's graph, the final answer) stay separate requests.",
        "Each request then begins with the previous one, so a server's prefix cache prefills only what is new "
        "(issue 46).",
        "-o prompt_order=paper",
        ("prompt_order", "paper"),
    ),
)
