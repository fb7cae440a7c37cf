"""Every known deviation from the papers, method by method: the one place to read before comparing runs.

Data, not prose: ``swarm-tui strategies --fidelity`` prints it, the README renders it, and a test checks
that every method option named here exists in the registry and changes what a run sends. An entry says
what the paper does, what swarm-tui does, why, and how to get the paper's behaviour (``paper_by``) or,
where the paper is the default, the option that turns the economy on (``other_by``).
"""

from __future__ import annotations

from dataclasses import dataclass

# How an entry's switch is set: a method option (-o KEY=VALUE), a run setting (flag / config key), a command.
VIA_OPTION = "option"
VIA_SETTING = "setting"
VIA_COMMAND = "command"


@dataclass(frozen=True)
class Switch:
    via: str  # VIA_OPTION | VIA_SETTING | VIA_COMMAND
    text: str  # option: "key=value"; setting: "--flag / config key"; command: the command line

    def option(self) -> tuple[str, str]:
        """(key, value) of a method option switch."""
        key, _, value = self.text.partition("=")
        return key, value

    def render(self) -> str:
        return f"-o {self.text}" if self.via == VIA_OPTION else self.text


@dataclass(frozen=True)
class Deviation:
    methods: tuple[str, ...]  # the registered methods it applies to
    topic: str
    paper: str  # what the paper does (equation or section)
    ours: str  # what swarm-tui does by default
    reason: str
    paper_by: Switch | None = None  # how to get the paper's behaviour, when it is not the default
    other_by: Switch | None = None  # the paper is the default: the switch to the other behaviour

    @property
    def default_is_paper(self) -> bool:
        return self.paper_by is None and self.other_by is not None


_DYTOPO_ROUNDS = ("dytopo", "single-turn", "random", "broadcast", "chain", "star")
_MULTI_ROUND = ("dytopo", "random", "broadcast", "chain", "star")  # single-turn has no later round

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        ("dytopo", "single-turn"), "edge threshold",
        "eq. 6: an edge when S[i][j] > tau", "S[i][j] >= tau",
        "the reference deployment builds A = (S >= tau); on float scores the two differ only on exact ties",
    ),
    Deviation(
        _MULTI_ROUND, "memory",
        "eq. 3: H_i(t+1) = H_i(t) ∪ own output ∪ routed messages",
        "the paper's accumulating memory, trimmed oldest-first to context_budget_tokens (recorded as an event)",
        "the economy keeps only the newest message per teammate: fewer prompt tokens, but earlier messages "
        "vanish from later prompts",
        other_by=Switch(VIA_OPTION, "memory=latest"),
    ),
    Deviation(
        ("dytopo",), "what an edge carries",
        "eq. 3: the private message along a routed edge",
        "auto: private in single-pass, private+public in the phased protocol",
        "the phased protocol is the reference deployment's, and its messages carry both fields",
        paper_by=Switch(VIA_OPTION, "payload=private"),
    ),
    Deviation(
        _DYTOPO_ROUNDS, "round protocol",
        "§3: single pass per round, agents in the routed order (eq. 10-11)",
        "phased: every worker's descriptors, then routing, then work; cycles broken at the weakest edge",
        "the reference deployment's lifecycle; the paper's order is kept for single-pass",
        paper_by=Switch(VIA_SETTING, "--protocol single-pass / protocol"),
    ),
    Deviation(
        _DYTOPO_ROUNDS, "sampling extras and /no_think",
        "temperature and max tokens only",
        "the same; top_p, top_k, min_p and /no_think on descriptor calls are opt-ins",
        "the reference deployment sets them for Qwen3; off unless a run asks",
        other_by=Switch(VIA_SETTING, "top_p / top_k / min_p / no_think (config)"),
    ),
    Deviation(
        ("dytopo", "single-turn"), "k_in",
        "k_in any positive number", "k_in above N - 1 is refused with one line",
        "an agent has at most N - 1 possible senders: a larger k_in would silently mean N - 1",
    ),
    Deviation(
        ("topodim",), "eqs. 6-7 readings",
        "eq. 6 decodes relations pair by pair; eq. 7 masks edges that would close a cycle",
        "a 4-way decoder over {none, conditioned, feedback, debate}; each pair (i, j) followed by (j, i); "
        "the mask forbids a conditioned/debate edge i->j when a path j->i exists",
        "the paper's notation leaves these open (METHODS.md §1.3); this reading keeps every structural rule",
    ),
    Deviation(
        ("topodim",), "no edge kept",
        "eq. 9: only agents with a kept edge run; the paper is silent when none is left",
        "every agent answers alone, then the decision-maker",
        "the public code's direct answer; a run with no agent would give no answer",
    ),
    Deviation(
        ("topodim",), "graph generator",
        "§3.2: the trained policy network draws the graph",
        "prior: the Manager writes the typed graph in one extra call per problem",
        "the policy needs training (swarm-tui train topodim); the prior is the paper's initialisation",
        paper_by=Switch(VIA_OPTION, "generator=policy"),
    ),
    Deviation(
        ("topodim",), "policy sizes",
        "the R-GCN generator's sizes are not given",
        "hidden 32, two R-GCN layers, tanh; untrained, a seeded initialisation",
        "our choice where the paper is silent; train with swarm-tui train topodim",
        paper_by=Switch(VIA_COMMAND, "swarm-tui train topodim"),
    ),
    Deviation(
        ("dmoa",), "router training",
        "§4.2: the GRU router trained without labels (eqs. 13-15)",
        "a seeded, untrained GRU until it is trained",
        "training needs an endpoint that returns top logprobs",
        paper_by=Switch(VIA_COMMAND, "swarm-tui train dmoa"),
    ),
    Deviation(
        ("dmoa",), "the query in the system prompt",
        "§3: P_sys = (Profile, P_usr)",
        "the paper's: each agent's system prompt holds the user's query",
        "the other layout sends the query with the previous step's responses in the user message",
        other_by=Switch(VIA_OPTION, "query=user"),
    ),
    Deviation(
        ("dmoa",), "eq. 13 without logprobs",
        "eq. 13: the mean token entropy over all M generated tokens",
        "the same, a single logprob counting as entropy 0; a token with no logprob at all is left out of M",
        "nothing is known of that token's distribution; counting it 0 would make a terse server look certain",
    ),
    Deviation(
        ("dmoa", "topoweaver"), "code execution",
        "the agents have a code execution tool",
        "off unless --execute; then the sandbox tests the latest code after every step or turn",
        "running generated code is the user's choice (bubblewrap sandbox)",
        paper_by=Switch(VIA_SETTING, "--execute / execute_code"),
    ),
    Deviation(
        ("topoweaver",), "orchestrator",
        "Qwen2.5-3B after SFT and GRPO",
        "a prompted model (the run's, or orchestrator_model)",
        "the trained orchestrator is not available; METHODS.md §3.7's untrained variant",
    ),
    Deviation(
        ("topoweaver",), "invalid plan",
        "Alg. 1: an invalid plan uses up its turn",
        "the paper's",
        "a difficulty template can run instead",
        other_by=Switch(VIA_OPTION, "fallback=true"),
    ),
)


def deviations_for(method: str) -> list[Deviation]:
    return [d for d in DEVIATIONS if method in d.methods]


def method_switches() -> list[tuple[str, Deviation, Switch]]:
    """(method, deviation, switch) for every method option the list names (what the test runs)."""
    out = []
    for d in DEVIATIONS:
        for switch in (d.paper_by, d.other_by):
            if switch is not None and switch.via == VIA_OPTION:
                out.extend((m, d, switch) for m in d.methods)
    return out


def how(d: Deviation) -> str:
    """The switch, in words: how to get the paper's behaviour, or how to leave it."""
    if d.paper_by is not None:
        return f"the paper's: {d.paper_by.render()}"
    if d.other_by is not None:
        return f"the paper's by default; the alternative: {d.other_by.render()}"
    return "no switch"


def describe_fidelity(methods: list[str]) -> str:
    """Plain text, method by method, for ``swarm-tui strategies --fidelity``."""
    lines: list[str] = []
    for method in methods:
        entries = deviations_for(method)
        if not entries:
            continue
        lines.append(method)
        for d in entries:
            lines.append(f"  {d.topic}: {d.ours}")
            lines.append(f"    paper: {d.paper}")
            lines.append(f"    why: {d.reason}")
            lines.append(f"    switch: {how(d)}")
    return "\n".join(lines)


def fidelity_markdown(methods: list[str]) -> str:
    """The README's table (tests check the README holds it)."""
    rows = ["| Method | Topic | Paper | swarm-tui | Why | Switch |", "|---|---|---|---|---|---|"]
    for d in DEVIATIONS:
        names = ", ".join(m for m in methods if m in d.methods)
        cells = (names, d.topic, d.paper, d.ours, d.reason, how(d))
        rows.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(rows)
