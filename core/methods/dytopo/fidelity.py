"""Where DyTopo (arXiv 2602.06039) and its reference deployment depart from its paper.

core.methods.fidelity collects every method's list (MethodInfo.fidelity).
"""

from __future__ import annotations

from core.methods.registry import Deviation

DEVIATIONS: tuple[Deviation, ...] = (
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
        "Each worker's requests form one growing conversation: the system prompt is the team's preamble (the "
        "problem, the team, the rules of a round in one line), then the role and its reply shapes (a phased "
        "worker's two, once); each call appends a user turn (what arrived since the agent's last turn, the round's "
        "goal, the inbox, and a short ask naming the call kind) and keeps the reply as an assistant turn, as the "
        "model wrote it. The transcript is eq. 3's memory; what it adds to the paper's prompt is the earlier "
        "rounds' goals and short asks and the replies' own JSON around their public text (descriptors, private "
        "notes: kept byte for byte, or a server's cache of the generated reply is lost); a phased descriptor call "
        "also holds the whole problem (the paper order shows it the problem's opening). The Manager's "
        "conversation is its plan; each review is a side request after it, as the paper's Manager reads the "
        "current round only (§3.5.1-3.5.2, eqs. 12-13). Characters sent against the paper order of the same "
        "content: +16 % single-pass, +27 % phased (bench/prefix_cache.py says what the growth is made of: the "
        "earlier goals 33 % / 22 %, the replies' JSON 50 % / 41 %). Re-asks are side requests; a "
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
        'config: convergence_threshold = "off"',
    ),
)
