"""A session as one HTML page: the header (method, model, redacted endpoint, options, end, answer, verdict),
then one section per step in the method's own unit (round, step, turn, call) with its goal or plan, its graph
(core.sessions.html.graph_svg), each agent's output, its inbox, notices, steering actions, tokens and time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.llm.prices import cost_text
from core.llm.urls import redact_url
from core.methods.catalogue import get_method_info
from core.methods.registry import MethodError, format_options
from core.routing.dytopo import KIND_PINNED, edge_label
from core.routing.layout import legend
from core.runtime.config import DomainName, RoundProtocol
from core.runtime.events import CallStatus, RunFinished, Severity, UserSteered
from core.sessions.html.graph_svg import graph_svg, nodes_svg, style_note
from core.sessions.html.math import math_text
from core.sessions.html.page import anchor_id, document, esc, permalink, removed_toggle, stepper
from core.sessions.html.text import code_block, diff_block, folded, rich_text
from core.sessions.html.timeline import Call, calls, run_timeline, step_timeline
from core.sessions.model import RoundRecord, Session


def unit_of(strategy: str) -> str:
    """What the method steps over: round, step, turn, call; a method this version does not know: round."""
    try:
        return get_method_info(strategy).unit
    except MethodError:
        return "round"


def verdict(session: Session) -> str:
    o = session.outcome
    if o is None or o.solved is None:
        return "no verdict"
    return "tests passed" if o.solved else "tests failed"


def _code_lang(session: Session) -> str:
    return "python" if session.domain == DomainName.CODE else ""


def _tiered(session: Session) -> bool:
    """In DyTopo's single-pass protocol every worker answers at once: a graph has an order, no tiers."""
    try:
        uses_tau = get_method_info(session.metadata.strategy).uses_tau
    except MethodError:
        uses_tau = True
    return not (session.metadata.protocol == RoundProtocol.SINGLE_PASS and uses_tau)


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min"


def _round_times(session: Session) -> dict[int, float]:
    """Seconds from a round's first event to its last."""
    spans: dict[int, list[float]] = {}
    for e in session.events:
        n, ts = e.get("round"), e.get("ts")
        if isinstance(n, int) and isinstance(ts, int | float):
            span = spans.setdefault(n, [ts, ts])
            span[0], span[1] = min(span[0], ts), max(span[1], ts)
    return {n: b - a for n, (a, b) in spans.items()}


WIDE = {"ended", "problem"}  # long values: a row of their own


def meta_rows(rows: Iterable[tuple[str, str]]) -> str:
    """Label/value pairs (values already HTML) in a grid that folds to one column on a phone."""
    return '<div class="meta">' + "".join(
        f'<div{" class=wide" if k in WIDE else ""}><span class="k">{esc(k)}</span> {v}</div>' for k, v in rows
    ) + "</div>"


def _steer_key(e: UserSteered) -> tuple[Any, ...]:
    return (e.ts, e.round, e.phase, e.action, e.target, e.accepted, repr(sorted(e.payload.items())))


def header(session: Session) -> str:
    """Who ran what, where, and how it ended."""
    m = session.metadata
    o = session.outcome
    title = session.problem.strip().splitlines()[0] if session.problem.strip() else "(no problem)"
    badges = '<span class="badge demo">DEMO: a scripted server answered</span>' if m.demo else ""
    params = ", ".join(f"{k} {v}" for k, v in sorted(m.params.items()))
    team = ", ".join(m.workers) or "agents named at run time"
    rows = [
        ("method", esc(f"{m.strategy} ({m.protocol})")),
        ("model", esc(m.model)),
        ("endpoint", esc(redact_url(m.base_url))),
        ("options", esc(format_options(m.method_options) or "none recorded")),
        ("settings", esc(params)),
        ("domain", esc(m.domain)),
        ("team", esc(f"{m.manager} (manager); {team}")),
        ("started", esc(session.created + (f", finished {session.finished}" if session.finished else ""))),
    ]
    if m.parent:
        rows.append(("forked from", esc(f"{m.parent.get('session')} at round {m.parent.get('round')}")))
    if o is None:
        rows.append(("ended", esc(f"did not finish ({session.completed_rounds} {unit_of(m.strategy)}s recorded)")))
    else:
        mark = "~" if getattr(o, "tokens_estimated", 0) else ""
        rows += [
            ("ended", math_text(f"{o.reason} — {o.detail}" if o.detail else o.reason)),
            ("tokens", esc(f"{mark}{o.prompt_tokens} prompt + {mark}{o.completion_tokens} completion"
                           + (" (~ partly estimated)" if mark else ""))),
            ("time", esc(_latency(max(0.0, o.ts - m.ts)))),
            *([("cost", esc(_cost(o)))] if o.cost_usd is not None or o.cost_unknown else []),
        ]
    v = verdict(session)
    css = "ok" if v == "tests passed" else "bad" if v == "tests failed" else "mute"
    rows.append(("verdict", f'<span class="{css}">{esc(v)}</span>'))
    # Session.steering builds new events on each read: an action is matched to its round's by what it is.
    placed = {_steer_key(e) for r in session.rounds for e in r.steering}
    early = [e for e in session.steering if _steer_key(e) not in placed]
    before = f"<h3>Steering before the first {unit_of(m.strategy)}</h3>{steering_list(early)}" if early else ""
    answer = ""
    if o is not None:
        source = f" (from {o.answer_source})" if o.answer_source else ""
        body = rich_text(o.final_answer, code_default=_code_lang(session), answer=True) or '<p class="mute">(none)</p>'
        answer = f"<h3>Answer{esc(source)}</h3>{body}"
    timeline = run_timeline(session, unit_of(m.strategy))
    played = (f'<p class="mute">The demo server played its own problem ({esc(m.demo_played)}): the answer and '
              "verdict are about that problem.</p>") if m.demo and m.demo_played else ""
    return (f"<header><p>{badges}<span class=\"badge\">swarm-tui session</span></p><h1>{math_text(title)}</h1>"
            f"{meta_rows(rows)}{played}{timeline}<details><summary>the problem</summary>"
            f"{code_block(session.problem, '')}</details>{before}{answer}</header>")


def _graph(session: Session, record: RoundRecord, uid: str, unit: str) -> str:
    routing = record.routing
    caption = f"{unit} {record.round}"
    if routing is None:
        workers = session.metadata.workers
        if record.broadcast and workers:
            n = len(workers)
            note = f"broadcast: every worker hears every other worker ({n * (n - 1)} edges)"
            drawing = nodes_svg(workers, caption=f"{caption}: {note}", uid=uid, broadcast=True)
            return drawing + f'<p class="legend">{esc(note)}</p>'
        agents = list(dict.fromkeys(o.agent for o in record.outputs))
        note = "one agent: no topology" if len(agents) <= 1 else "no graph recorded for this " + unit
        return f'<p class="legend">{esc(note)}</p>'
    svg = graph_svg(routing, tiered=_tiered(session), uid=uid, caption=f"{caption}: {legend(routing)}")
    edges = "".join(
        f"<li>{esc(e.src)} → {esc(e.dst)} <span class=\"mute\">{esc(_edge_text(e))}</span></li>" for e in routing.edges
    ) or '<li class="mute">no edges: every agent works alone</li>'
    removed = "".join(
        f"<li>{esc(r.src)} → {esc(r.dst)} <span class=\"mute\">{r.score:.2f}, {esc(r.reason)}</span></li>"
        for r in routing.removed
    )
    lists = f'<ul class="edges">{edges}</ul>'
    if removed:
        lists += (f"<details><summary>{len(routing.removed)} removed</summary>"
                  f'<ul class="edges">{removed}</ul></details>')
    if routing.inactive:
        lists += f'<p class="legend">not running: {esc(", ".join(routing.inactive))}</p>'
    rerouted = " · re-routed during the " + unit if record.rerouted else ""
    styles = style_note(routing)
    styles_line = f'<p class="legend">lines: {esc(styles)}</p>' if styles else ""
    return f'{svg}<p class="legend">{esc(legend(routing) + rerouted)}</p>{styles_line}{lists}'


def _edge_text(e: Any) -> str:
    return ("pinned " if e.kind == KIND_PINNED else "") + edge_label(e)


def _cost(o: RunFinished) -> str:
    """The run's cost as the cell says it: "$0.0042", "free (local server)", "unknown for model X"."""
    return cost_text(o.cost_usd, o.cost_unknown, o.cost_local).removeprefix("cost ").removeprefix("cost: ")


def _latency(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else _seconds(seconds)


def card_ids(record: RoundRecord, uid: str) -> list[str]:
    """The id of each output's card, in order: ``step-N-Agent`` for the agent's last output that is not its
    descriptors (what it said in the step), ``step-N-Agent-call`` for its others."""
    main = {o.agent: o for o in record.outputs if o.call != "descriptors"}
    seen: set[str] = set()
    return [_unique(anchor_id(uid, o.agent) if main.get(o.agent, o) is o else anchor_id(uid, o.agent, o.call), seen)
            for o in record.outputs]


def _unique(base: str, seen: set[str]) -> str:
    """``base``, or ``base-2``, ``base-3``… if taken; marked as taken."""
    chosen, n = base, 1
    while chosen in seen:
        n += 1
        chosen = f"{base}-{n}"
    seen.add(chosen)
    return chosen


def _output(o: Any, lang: str, card_id: str, before: tuple[str, str] | None = None) -> str:
    """One call's card. ``before``: ("round 1", text) of the agent's same call in the step before, to diff."""
    usage = f"{o.prompt_tokens}+{o.completion_tokens} tok · {_latency(o.latency_s)}"
    status = "" if o.status == CallStatus.DONE else f' <span class="bad">{esc(o.status)}</span>'
    head = (f'<h4>{esc(o.agent)} <span class="mute">· {esc(o.call)} · {esc(usage)}</span>{status}'
            f"{permalink(card_id)}</h4>")
    if o.call == "descriptors":
        body = (f'<div class="prose"><b>needs:</b> {esc(o.query)}\n<b>offers:</b> {esc(o.key)}</div>')
    else:
        body = rich_text(o.public, code_default=lang) if o.public else (
            folded(o.raw, code_block(o.raw, "")) if o.raw else '<p class="mute">(no output)</p>')
        body += "".join(f'<p class="prose"><i>private note for {esc(to)}:</i> {esc(note)}</p>'
                        for to, note in o.private.items())
        if o.answer:
            body += f"<p><b>answer:</b></p>{rich_text(o.answer, code_default=lang, answer=True)}"
        if before is not None and o.public:
            body += diff_block(before[1], o.public, before[0])
    if o.error:
        body += f'<p class="bad prose">error: {esc(o.error)}</p>'
    return f'<div class="card output" id="{esc(card_id)}" data-agent="{esc(o.agent)}">{head}{body}</div>'


def _inbox(record: RoundRecord, lang: str, uid: str) -> str:
    """Each agent's received messages; a message's id is ``step-N-Dst-from-Src``."""
    if not record.deliveries:
        return ""
    by_dst: dict[str, list[dict[str, Any]]] = {}
    for d in record.deliveries:
        by_dst.setdefault(str(d.get("dst", "?")), []).append(d)
    parts = []
    seen: set[str] = set()
    for dst, items in by_dst.items():
        rows = ""
        for d in items:
            mid = _unique(anchor_id(uid, dst, "from", str(d.get("src", "?"))), seen)
            score = f" · {float(d['score']):.2f}" if isinstance(d.get("score"), int | float) else ""
            rows += (f'<details id="{esc(mid)}"><summary>from {esc(d.get("src", "?"))}{score}{permalink(mid)}'
                     f"</summary>{rich_text(str(d.get('content', '')), code_default=lang)}</details>")
        parts.append(f'<div class="card inbox" data-agent="{esc(dst)}"><h4>{esc(dst)} received '
                     f'<span class="mute">{len(items)} message(s)</span></h4>{rows}</div>')
    return "<h3>Inbox</h3>" + "".join(parts)


def steering_list(actions: list[UserSteered]) -> str:
    """Each steering action, taken or refused, where the run was when it applied."""
    items = []
    for e in actions:
        what = " ".join(part for part in (e.action, e.target) if part)
        text = e.payload.get("text")
        details = [f"{k} {e.payload[k]}" for k in sorted(e.payload) if k not in ("src", "dst", "to", "agent", "text")]
        line = (f"after {e.phase}: " if e.phase else "") + what + (f": {' '.join(str(text).split())!r}" if text else "")
        line += f" ({', '.join(details)})" if details else ""
        verdict = ('<span class="ok">taken</span>' if e.accepted else
                   f'<span class="bad">refused: {esc(e.reason)}</span>')
        items.append(f"<li>{esc(line)} — {verdict}</li>")
    return f'<ul class="steering">{"".join(items)}</ul>'


def round_section(session: Session, record: RoundRecord, *, uid: str, unit: str, compact: bool = False,
                  times: dict[int, float] | None = None, every: list[Call] | None = None,
                  previous: RoundRecord | None = None) -> str:
    """One step of the run. ``compact``: outputs and timeline folded (a comparison's narrow column); ``every``:
    the run's calls (core.sessions.html.timeline.calls), when the caller has them; ``previous``: the step before,
    whose outputs each card can be diffed against."""
    lang = _code_lang(session)
    p = record.params
    head_bits = [f"{unit.capitalize()} {record.round}"]
    tokens = f"{record.prompt_tokens}+{record.completion_tokens} tokens"
    seconds = (times or {}).get(record.round)
    info = [tokens] + ([_latency(seconds)] if seconds is not None else [])
    if "tau" in p and record.routing is not None and not record.routing.typed:
        info.insert(0, f"tau {p['tau']} · k_in {p['k_in']}")
    if not record.finished:
        info.append("did not finish")
    out = [f'<section class="step" data-step="{record.round}" id="{esc(uid)}"><h2>{esc(head_bits[0])} '
           f'<span class="mute">· {esc(" · ".join(info))}</span>{permalink(uid)}</h2>']
    for change in record.param_changes:
        out.append(f'<p class="legend">changed during the {unit}: '
                   f'{esc(", ".join(f"{k}={change.params[k]}" for k in change.changed))}</p>')
    left = [f"<h3>Graph</h3>{_graph(session, record, uid, unit)}"]
    if record.descriptors:
        roster = session.metadata.workers
        ordered = sorted(record.descriptors, key=lambda a: roster.index(a) if a in roster else len(roster))
        items = "".join(f"<li><b>{esc(a)}</b> needs: {esc(record.descriptors[a].get('query', ''))} / offers: "
                        f"{esc(record.descriptors[a].get('key', ''))}</li>" for a in ordered)
        left.append(f'<details{"" if compact else " open"}><summary>descriptors</summary>'
                    f'<ul class="edges">{items}</ul></details>')
    described = [line for e in record.method_events if callable(getattr(e, "progress_lines", None))
                 for line in e.progress_lines()]  # type: ignore[attr-defined]
    if described:
        left.append(f"<h3>Method</h3>{code_block(chr(10).join(described), '')}")
    right: list[str] = []
    if record.plan is not None and (record.plan.next_goal or record.plan.reasoning):
        plan = record.plan
        right.append(f"<h3>Plan</h3>{rich_text(plan.next_goal)}{rich_text(plan.reasoning)}")
    if record.goal and not (record.plan is not None and record.plan.next_goal.strip() == record.goal.strip()):
        right.append(f"<h3>Goal</h3>{rich_text(record.goal)}{rich_text(record.goal_note)}")  # plan goal: above
    if record.notices:
        items = "".join(f'<li class="{"bad" if n.severity == Severity.ERROR else ""}">{esc(n.severity)}'
                        f'{" · " + esc(n.agent) if n.agent else ""}: {esc(n.message)}</li>' for n in record.notices)
        right.append(f'<h3>Notices</h3><ul class="notices">{items}</ul>')
    if record.steering:
        right.append(f"<h3>Steering</h3>{steering_list(record.steering)}")
    right.append(step_timeline(session, record.round, open_=not compact, every=every))
    earlier = {(o.agent, o.call): (f"{unit} {previous.round}", o.public) for o in previous.outputs
               if o.public} if previous else {}
    outputs = "".join(_output(o, lang, cid, earlier.get((o.agent, o.call)))
                      for o, cid in zip(record.outputs, card_ids(record, uid), strict=True))
    if compact:
        right.append(f"<details><summary>{len(record.outputs)} output(s)</summary>{outputs}</details>")
    else:
        right.append(f"<h3>Outputs</h3>{outputs or '<p class=mute>(none)</p>'}")
    inbox = _inbox(record, lang, uid)
    if inbox:
        right.append(f"<details><summary>inbox</summary>{inbox}</details>" if compact else inbox)
    for t in record.test_runs:
        css = "ok" if t.passed else "bad"
        right.append(f'<p class="{css}">tests: {esc(t.outcome)}'
                     + (f" — {esc(t.failing_test)}" if t.failing_test else "") + "</p>")
    if record.decision is not None:
        d = record.decision
        what = "terminate" if d.terminate else "continue" + (f" — next goal: {d.next_goal}" if d.next_goal else "")
        right.append(f"<h3>Decision</h3><p>{esc(what)}</p>{rich_text(d.reasoning)}")
    out.append(f'<div class="stepgrid"><div>{"".join(left)}</div><div>{"".join(right)}</div></div></section>')
    return "".join(out)


def steps(session: Session, *, prefix: str = "", compact: bool = False) -> list[str]:
    """Every step's section, in order; its id is ``{prefix}step-N`` (a comparison prefixes each column's)."""
    unit = unit_of(session.metadata.strategy)
    times = _round_times(session)
    every = calls(session)
    return [round_section(session, r, uid=f"{prefix}step-{r.round}", unit=unit, compact=compact, times=times,
                          every=every, previous=session.rounds[i - 1] if i else None)
            for i, r in enumerate(session.rounds)]


def session_page(session: Session) -> str:
    """The whole page of one session."""
    unit = unit_of(session.metadata.strategy)
    title = session.problem.strip().splitlines()[0] if session.problem.strip() else "session"
    body = header(session) + stepper(unit) + removed_toggle() + "".join(steps(session))
    if not session.rounds:
        body += '<p class="mute">No step was recorded.</p>'
    return document(f"swarm-tui · {title[:80]}", body)
