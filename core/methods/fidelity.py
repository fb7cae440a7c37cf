"""Where each method departs from its paper: one list, with the reason and what restores the paper.

``swarm-tui strategies --fidelity`` prints it and docs/fidelity.md shows the same; a
test checks that every option named here exists and changes what the method does. Defaults follow the
papers; an economy or a reading the paper leaves open is listed here, never hidden in a docstring.

``restore`` is what a user sets to get the paper's behaviour: ``-o KEY=VALUE`` for a method option
(``option`` names it), a config-file setting, or a command. Empty when nothing can (a plain reading of
an ambiguous passage, or something the app cannot do on a user's machine).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Deviation:
    method: str  # a registered method name, or "all"
    what: str  # what the app does
    why: str  # the reason
    restore: str = ""  # how to get the paper's behaviour back ("" when the app cannot)
    option: tuple[str, str] | None = None  # (option, value) of the method that restores the paper
    default_is_paper: bool = False  # the default already follows the paper; the entry names an opt-out


DEVIATIONS: tuple[Deviation, ...] = (
    # --- DyTopo (arXiv 2602.06039) and the reference deployment ---------------------------------------
    Deviation(
        "dytopo",
        "An edge is kept when cos(q_i, k_j) >= tau; eq. 6 writes > tau.",
        "The reference deployment builds A = (S >= tau); with float scores the two differ only on exact ties.",
    ),
    Deviation(
        "dytopo",
        "Memory accumulates (eq. 3): a worker's prompt shows every earlier own output and routed message, "
        "oldest dropped first when the context budget (context_budget_tokens) is exceeded, recorded as a "
        "MemoryTrimmed event.",
        "The paper's memory. memory=latest is an economy that shows only each teammate's newest message.",
        "-o memory=accumulate (the default)",
        ("memory", "accumulate"),
        default_is_paper=True,
    ),
    Deviation(
        "dytopo",
        "The default protocol is phased (descriptors, routing, then work each round), as the reference "
        "deployment runs it; Algorithm 1 is single-pass (descriptors come with the previous round's work).",
        "The reference deployment is the measured system; both protocols are implemented.",
        "--protocol single-pass",
    ),
    Deviation(
        "dytopo",
        "In the phased protocol an edge carries the sender's public and private text (payload auto); the "
        "paper routes the private message only.",
        "The reference deployment injects the whole output; single-pass already sends private only.",
        "-o payload=private",
        ("payload", "private"),
    ),
    Deviation(
        "dytopo",
        "Each agent's requests (every worker's and the Manager's) form one growing conversation: the system "
        "prompt is the team's preamble (the problem, the team, the rules of a round), then the role and its "
        "reply shapes; each call appends a user turn (what arrived since the agent's last turn, the round's goal, "
        "the inbox, the ask) and keeps the reply as an assistant turn. The transcript is eq. 3's memory; what it "
        "adds to the paper's prompt is the earlier rounds' goals and asks, the replies' own JSON around their "
        "public text, and for the Manager the earlier rounds' reviews. Re-asks are side requests; a "
        "conversation that outgrows the context drops its oldest exchanges in one step (MemoryTrimmed). "
        "memory=latest keeps the per-request layout (-o prompt_order=cache: role, problem, memory, goal).",
        "What persists comes first and what every agent shares comes first of all, so a local server "
        "(llama.cpp slots, vLLM prefix caching, SGLang) prefills each token once and the problem once per team "
        "(bench/prefix_cache.py). The reference order puts \"You are ...\" first and the goal before memory.",
        "-o prompt_order=paper",
        ("prompt_order", "paper"),
    ),
    Deviation(
        "dytopo",
        "The reply shapes' values are angle-bracketed slots (\"<your work this round, ...>\", \"<a teammate's "
        "name>\", \"<what you need next from teammates, in one sentence>\", \"<the concrete goal for the next "
        "round; empty when terminating>\") followed by one line: write your own text in place of every slot. A "
        "reply that repeats a slot in a field it must write is asked for once more, then counted as copied, not "
        "parsed; it is not routed, embedded or shown as work.",
        "Small local models copy a shape's example values verbatim (SmolLM2-135M: 15 of 15 replies); a slot cannot "
        "pass for content. The fields asked for are the paper's (Appendix B).",
    ),
    Deviation(
        "dytopo",
        "A phased descriptor call sees the agent's whole state, as every output of eq. 1 is drawn from it "
        "(S_i = [role; task; memory]): the whole problem and memory, then the round's goal. "
        "descriptor_context=round is an economy: the problem's opening and the last round's memory only.",
        "Eq. 1 conditions the descriptors on the whole state; the reference does not say what its phase-A prompt "
        "holds. On a server with a prefix cache the work call that follows reuses the descriptor call's prompt, "
        "so the whole state leaves fewer tokens to prefill than the economy (bench/prefix_cache.py).",
        "-o descriptor_context=full (the default)",
        ("descriptor_context", "full"),
        default_is_paper=True,
    ),
    Deviation(
        "dytopo",
        "The reference's sampling extras (top_p 0.85, top_k 20, min_p 0.05) and /no_think on descriptor calls "
        "are off by default.",
        "They are tuned for Qwen3 on LM Studio; other servers reject or misread them.",
        "config: top_p = 0.85, top_k = 20, min_p = 0.05, no_think = true",
    ),
    Deviation(
        "dytopo",
        "k_in above N-1 is refused with one line.",
        "An agent cannot have more inbound edges than teammates; the paper leaves k_in unbounded.",
    ),
    Deviation(
        "dytopo",
        "A run also ends when the workers' outputs stop changing (similarity >= convergence_threshold, 0.95), "
        "as the reference deployment does; in the paper only the Manager halts (§3.5.2).",
        "Saves rounds that would repeat the same outputs; the Manager still halts first when it can.",
        "config: convergence_threshold = 1.01 (never reached)",
    ),
    Deviation(
        "random",
        "The random baseline draws an acyclic graph with as many edges as DyTopo chose that round.",
        "A fair random control needs the same density; the paper does not say how its random graphs are drawn.",
    ),
    # --- TopoDIM ----------------------------------------------------------------------------------------
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
    # --- DMoA -------------------------------------------------------------------------------------------
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
    # --- TopoWeaver-R1 ----------------------------------------------------------------------------------
    Deviation(
        "topoweaver",
        "The Orchestrator is the user's own model prompted with the paper's rules, not the SFT+GRPO-trained "
        "Qwen2.5-3B orchestrator.",
        "No trained orchestrator weights are public; --orchestrator-model picks a different model for it.",
    ),
    Deviation(
        "topoweaver",
        "An invalid plan uses up its turn (Alg. 1), as in the paper; fallback=true runs a difficulty template "
        "instead.",
        "The template keeps a run useful on a model that cannot write the YAML; it is not the paper's.",
        "-o fallback=false (the default)",
        ("fallback", "false"),
        default_is_paper=True,
    ),
    Deviation(
        "topoweaver",
        "The tester's verdict needs code execution: without --execute no turn can pass, so K turns always run "
        "(DMoA's agents likewise test code only with --execute); the paper's agents always have a sandbox.",
        "Running generated code is the user's choice (a bubblewrap sandbox).",
        "--execute",
    ),
    # --- every method -----------------------------------------------------------------------------------
    Deviation(
        "all",
        "Calls are capped by the token limits of the settings (descriptor_call, work_call, manager_call).",
        "Bounded runs on small local models; the reference's limits are the defaults (256 / 4096 / 2000).",
    ),
)


def deviations(method: str | None = None) -> list[Deviation]:
    """The list, or the entries of one method (its own and those for every method)."""
    if method is None:
        return list(DEVIATIONS)
    return [d for d in DEVIATIONS if d.method in (method, "all")]


def fidelity_text() -> str:
    """The list as ``swarm-tui strategies --fidelity`` prints it."""
    lines: list[str] = []
    current = ""
    for d in DEVIATIONS:
        if d.method != current:
            current = d.method
            lines.append(f"{'' if not lines else chr(10)}{current}")
        mark = "paper by default" if d.default_is_paper else "differs from the paper"
        lines.append(f"  - [{mark}] {d.what}")
        lines.append(f"      why: {d.why}")
        if d.restore:
            lines.append(f"      to restore: {d.restore}")
    return "\n".join(lines)


def fidelity_markdown() -> str:
    """The list as docs/fidelity.md shows it (a test keeps the two the same)."""
    rows = ["| method | what the app does | why | to restore the paper |", "|---|---|---|---|"]
    for d in DEVIATIONS:
        what = d.what + (" *(the paper's default)*" if d.default_is_paper else "")
        cells = (d.method, what, d.why, f"`{d.restore}`" if d.restore else "—")
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)
