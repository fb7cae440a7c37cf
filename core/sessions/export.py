"""Export a session: a Markdown transcript, JSON/TOML, every round's graph as Graphviz DOT or
Mermaid (one subgraph per round, edge labels = scores), or one self-contained HTML page (core.sessions.html)."""

from __future__ import annotations

import re

from core.llm.prices import cost_text
from core.methods.registry import format_options
from core.routing.dytopo import (
    KIND_CROSS,
    KIND_DEBATE,
    KIND_FEEDBACK,
    KIND_FIXED,
    KIND_HANDOFF,
    KIND_ROUTED,
    edge_label,
)
from core.sessions.html.session import session_page
from core.sessions.model import RoundRecord, Session
from core.sessions.store import session_to_json, session_to_toml

FORMATS = ("md", "json", "toml", "dot", "mermaid", "html")


def export_session(session: Session, fmt: str) -> str:
    try:
        render = _RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown export format {fmt!r}: choose one of {', '.join(FORMATS)}") from None
    return render(session)


def _round_label(record: RoundRecord) -> str:
    routing = record.routing
    if routing is None:
        return f"round {record.round} · broadcast"
    if _planned(record):
        return f"round {record.round} · {len(routing.tiers)} steps"
    return f"round {record.round} · tau {routing.tau:.2f} · k_in {routing.k_in}"


def _planned(record: RoundRecord) -> bool:
    """A graph a method planned (typed edges, e.g. TopoWeaver-R1's refs), not one routed at a tau."""
    edges = record.routing.edges if record.routing is not None else []
    return bool(edges) and all(e.kind not in (KIND_ROUTED, KIND_FIXED) for e in edges)


def _nodes(record: RoundRecord, workers: list[str]) -> list[str]:
    """A round's graph's own agents (a method may name them at run time), else the roster."""
    return list(record.routing.names) if record.routing is not None else list(workers)


# --- Markdown ----------------------------------------------------------------------------------


def _fence(text: str, lang: str = "") -> str:
    """A code fence longer than any backtick run inside the text, so the text cannot close it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _markdown(session: Session) -> str:
    m = session.metadata
    out: list[str] = []
    title = session.problem.strip().splitlines()[0] if session.problem.strip() else "(no problem)"
    out.append(f"# Session: {title}")
    out.append("")
    if m.demo:
        out.append("> DEMO session: a scripted model server answered, not a real model.")
        if m.demo_played:  # the server played its own scenario: the answer and verdicts below are about it
            out.append(f"> It played its own problem ({m.demo_played}), not the one below: the answer and any "
                       "test verdict are about that problem.")
        out.append("")
    out.append(f"- created: {session.created}" + (f", finished: {session.finished}" if session.finished else ""))
    out.append(f"- domain: {m.domain}; protocol: {m.protocol}; strategy: {m.strategy}")
    out.append(f"- method options: {format_options(m.method_options) or 'none recorded'}")
    out.append(f"- model: {m.model} at {m.base_url}")
    out.append(f"- team: {m.manager} (manager), {', '.join(m.workers) or 'agents named at run time'}")
    if m.parent:
        out.append(f"- forked from {m.parent.get('session')} at round {m.parent.get('round')}")
    out.append(f"- app version: {session.app_version}")
    out += ["", "## Problem", "", _fence(session.problem, "text"), ""]
    for record in session.rounds:
        out += _markdown_round(record, session.metadata.workers)
    out += _markdown_steering(session)
    out.append("## Outcome")
    out.append("")
    if session.outcome is None:
        out.append(f"The run did not finish (recorded {session.completed_rounds} completed rounds).")
    else:
        o = session.outcome
        out.append(f"- ended: {o.reason} — {o.detail}")
        out.append(f"- rounds: {o.rounds}; tokens: {o.prompt_tokens} prompt + {o.completion_tokens} completion")
        if o.cost_usd is not None or o.cost_unknown:  # sessions from before costs were kept say nothing
            out.append(f"- {cost_text(o.cost_usd, o.cost_unknown, o.cost_local)}")
        if o.solved is not None:
            out.append(f"- tests passed: {'yes' if o.solved else 'no'}")
        source = f" (from {o.answer_source})" if o.answer_source else ""
        out += ["", f"### Final answer{source}", "", o.final_answer or "(none)"]
    out.append("")
    return "\n".join(out)


def _markdown_steering(session: Session) -> list[str]:
    """Every steering action, taken or refused, where the run was when it applied (none: no section)."""
    actions = session.steering
    if not actions:
        return []
    taken = sum(1 for e in actions if e.accepted)
    out = ["## Steering", "", f"{taken} action{'s' if taken != 1 else ''} taken, {len(actions) - taken} refused:", ""]
    for e in actions:
        where = f"round {e.round}, after {e.phase}" if e.phase else f"round {e.round}"
        what = " ".join(part for part in (f"**{e.action}**", e.target) if part)
        text = e.payload.get("text")
        details = [f"{k} {e.payload[k]}" for k in sorted(e.payload) if k not in ("src", "dst", "to", "agent", "text")]
        line = f"- {where}: {what}" + (f": {' '.join(str(text).split())!r}" if text else "") + (
            f" ({', '.join(details)})" if details else "")
        out.append(line + (" — taken" if e.accepted else f" — refused: {e.reason}"))
    out.append("")
    return out


def _markdown_round(record: RoundRecord, roster: list[str]) -> list[str]:
    p = record.params
    out = [f"## Round {record.round}", ""]
    out.append(f"Parameters: tau {p['tau']}, k_in {p['k_in']}, max_rounds {p['max_rounds']}")
    for change in record.param_changes:
        out.append(f"Changed during the round: {', '.join(f'{k}={change.params[k]}' for k in change.changed)}")
    out += ["", f"**Goal:** {record.goal or '(none)'}" + (f" ({record.goal_note})" if record.goal_note else ""), ""]
    if record.descriptors:
        out.append("### Descriptors")
        out.append("")
        # Roster order, whatever order the dict came in (a file's JSON has its keys sorted).
        for agent in sorted(record.descriptors, key=lambda a: roster.index(a) if a in roster else len(roster)):
            d = record.descriptors[agent]
            out.append(f"- **{agent}** needs: {d.get('query', '')} / offers: {d.get('key', '')}")
        out.append("")
    out.append("### Graph" + (" (re-routed during the round)" if record.rerouted else ""))
    out.append("")
    if record.routing is None:
        out.append("Broadcast: every worker's output went to every other worker.")
    else:
        routing = record.routing
        if routing.typed and routing.tiers and _planned(record):
            steps = " → ".join("[" + ", ".join(tier) + "]" for tier in routing.tiers)
            out.append(f"{len(routing.edges)} edges; steps {steps}:")
        elif routing.typed:
            out.append(f"{len(routing.edges)}/{routing.possible_edges} edges:")
        else:
            out.append(
                f"{len(routing.edges)}/{routing.possible_edges} edges (tau {routing.tau:.2f}, k_in {routing.k_in}):"
            )
        out.append("")
        out += [f"- {e.src} → {e.dst} ({edge_label(e)})" for e in routing.edges] or ["- (no edges)"]
        if routing.removed:
            out += ["", "Removed:", ""]
            out += [f"- {e.src} → {e.dst} ({edge_label(e)}, by {e.reason})" for e in routing.removed]
        if routing.inactive:
            out += ["", f"Not running: {', '.join(routing.inactive)}"]
        out += ["", f"Order: {' → '.join(routing.order)}"]
    out += ["", "### Outputs", ""]
    for o in record.outputs:
        usage = f"{o.prompt_tokens}+{o.completion_tokens} tokens, {o.latency_s:.1f} s"
        out.append(f"#### {o.agent} ({o.call}, {o.status}, {usage})")
        out.append("")
        if o.call == "descriptors":
            out.append(f"needs: {o.query} / offers: {o.key}")
        else:
            out.append(o.public or (_fence(o.raw, "text") if o.raw else "(no output)"))
            for to, note in o.private.items():
                out.append(f"\n*Private note for {to}:* {note}")
            if o.answer:
                out.append(f"\n**Answer:** {o.answer}")
        if o.error:
            out.append(f"\n*Error:* {o.error}")
        out.append("")
    for t in record.test_runs:
        out.append(f"**Tests:** {t.outcome}" + (f" — {t.failing_test}" if t.failing_test else ""))
        out.append("")
    described = [line for e in record.method_events if callable(getattr(e, "progress_lines", None))
                 for line in e.progress_lines()]  # type: ignore[attr-defined]
    if described:  # a method's own record of the round (e.g. DMoA's router and entropies)
        out += ["### Method", "", _fence("\n".join(described), "text"), ""]
    if record.decision is not None:
        decision = record.decision
        verdict = ("terminate" if decision.terminate else
                   f"continue — next goal: {decision.next_goal}" if decision.next_goal else "continue")
        out += ["### Manager decision", "", f"{verdict}", "", decision.reasoning, ""]
    if record.finished:
        out.append(f"*Round tokens: {record.prompt_tokens} prompt + {record.completion_tokens} completion.*")
    else:
        out.append("*This round did not finish.*")
    out.append("")
    return out


# --- graphs ------------------------------------------------------------------------------------


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dot(session: Session) -> str:
    out = ["digraph swarm {", "  rankdir=LR;", "  compound=true;"]
    out.append(f"  label={_dot_string(session.problem.strip().splitlines()[0] if session.problem.strip() else '')};")
    workers = session.metadata.workers
    for record in session.rounds:
        r = record.round
        out.append(f"  subgraph cluster_r{r} {{")
        out.append(f"    label={_dot_string(_round_label(record))};")
        inactive = set(record.routing.inactive) if record.routing is not None else set()
        for name in _nodes(record, workers):
            style = ", style=dashed, fontcolor=gray" if name in inactive else ""
            out.append(f"    {_dot_string(f'r{r}_{name}')} [label={_dot_string(name)}{style}];")
        for e in record.edges:
            src, dst = _dot_string(f"r{r}_{e.src}"), _dot_string(f"r{r}_{e.dst}")
            out.append(f"    {src} -> {dst} [label={_dot_string(edge_label(e))}{_DOT_STYLE.get(e.kind, '')}];")
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


# Styles per edge kind, matching the graph pane's glyphs: dashed for feedback and cross-turn edges,
# bold and two-headed for debate.
_DOT_STYLE = {
    KIND_FEEDBACK: ", style=dashed",
    KIND_DEBATE: ", style=bold, dir=both",
    KIND_CROSS: ", style=dashed",
    KIND_HANDOFF: ", style=dotted",
}
_MERMAID_ARROW = {KIND_FEEDBACK: "-.->", KIND_DEBATE: "<==>", KIND_CROSS: "-.->", KIND_HANDOFF: "-.->"}


def _mermaid_label(text: str) -> str:
    # Mermaid labels in ["..."]: quotes and line breaks as entities, nothing that ends the label.
    return '"' + text.replace('"', "#quot;").replace("\n", " ") + '"'


def _mermaid(session: Session) -> str:
    out = ["flowchart LR"]
    workers = session.metadata.workers
    for record in session.rounds:
        r = record.round
        # Ids by position, unique per round whatever the names contain.
        names = _nodes(record, workers)
        ids = {name: f"r{r}_a{i}" for i, name in enumerate(names)}
        out.append(f"  subgraph r{r}[{_mermaid_label(_round_label(record))}]")
        for name in names:
            out.append(f"    {ids[name]}[{_mermaid_label(name)}]")
        for e in record.edges:
            arrow = _MERMAID_ARROW.get(e.kind, "-->")
            out.append(f"    {ids[e.src]} {arrow}|{_mermaid_label(edge_label(e))[1:-1]}| {ids[e.dst]}")
        out.append("  end")
    return "\n".join(out) + "\n"


_RENDERERS = {
    "md": _markdown,
    "json": session_to_json,
    "toml": session_to_toml,
    "dot": _dot,
    "mermaid": _mermaid,
    "html": session_page,
}
