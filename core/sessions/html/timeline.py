"""Each agent's calls on a time axis, with their tokens (prompt, of it cached, completion): a waterfall as the
trace viewers draw one, per step and for the whole run. One HTML row per call (or per agent, for the run):
the name, an inline SVG bar on the shared axis, the tokens; the rows fold to two lines on a phone.

The times are the recorded events': a call starts at its agent_started and ends at its agent_finished (a
session without agent_started: its end less its latency). Everything shown comes from numbers and agent
names, escaped like all model text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.sessions.html.page import esc
from core.sessions.model import Session

WIDTH = 1000  # the bars' viewBox width: a bar is stretched to its cell


@dataclass(frozen=True)
class Call:
    round: int
    agent: str
    call: str
    start: float
    end: float
    prompt: int
    cached: int | None
    completion: int
    ok: bool


def calls(session: Session) -> list[Call]:
    """Every finished call of the run, in order of its start."""
    started: dict[tuple[Any, Any, Any], deque[float]] = {}
    out: list[Call] = []
    for e in session.events:
        key = (e.get("round"), e.get("agent"), e.get("call"))
        ts = e.get("ts")
        if not isinstance(ts, int | float):
            continue
        if e.get("type") == "agent_started":
            started.setdefault(key, deque()).append(float(ts))
        elif e.get("type") == "agent_finished" and isinstance(e.get("round"), int):
            queue = started.get(key)
            latency = e.get("latency_s")
            start = queue.popleft() if queue else float(ts) - (latency if isinstance(latency, int | float) else 0.0)
            cached = e.get("cached_tokens")
            out.append(Call(int(e["round"]), str(e.get("agent", "?")), str(e.get("call", "")), start, float(ts),
                            _int(e.get("prompt_tokens")), cached if isinstance(cached, int) else None,
                            _int(e.get("completion_tokens")), e.get("status") == "done"))
    return sorted(out, key=lambda c: c.start)


def _count(n: int) -> str:
    return f"{n} call{'s' if n != 1 else ''}"


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s" if seconds < 120 else \
        f"{seconds / 60:.1f} min"


def _tokens(prompt: int, cached: int | None, completion: int) -> str:
    hit = "" if cached is None else f" ({cached:,} cached)"
    return f"{prompt:,}{hit} + {completion:,}"


def _bar(spans: list[tuple[float, float, bool, str]], t0: float, total: float, marks: Sequence[float] = ()) -> str:
    """One row's bar: each (start, end, ok, title) a rect on the shared axis; ``marks``: step boundaries."""
    scale = WIDTH / total if total > 0 else 0.0
    rects = "".join(
        f'<rect class="{"ok" if ok else "bad"}" x="{(s - t0) * scale:.1f}" y="1" '
        f'width="{max(2.0, (e - s) * scale):.1f}" height="10"><title>{esc(title)}</title></rect>'
        for s, e, ok, title in spans
    )
    lines = "".join(f'<line x1="{(m - t0) * scale:.1f}" x2="{(m - t0) * scale:.1f}" y1="0" y2="12"/>' for m in marks)
    return (f'<svg class="wf-bar" viewBox="0 0 {WIDTH} 12" preserveAspectRatio="none" aria-hidden="true">'
            f"{lines}{rects}</svg>")


def _table(rows: list[str], t0: float, total: float, caption: str, *, open_: bool) -> str:
    axis = (f'<div class="wf-row wf-axis"><span class="wf-name"></span><span class="wf-scale"><span>0</span>'
            f"<span>{esc(_duration(total))}</span></span><span class=\"wf-tok\">prompt (cached) + completion</span>"
            "</div>")
    return (f'<details class="timeline"{" open" if open_ else ""}><summary>{esc(caption)}</summary>'
            f'<div class="wf">{axis}{"".join(rows)}</div></details>')


def step_timeline(session: Session, step: int, *, open_: bool = True, every: list[Call] | None = None) -> str:
    """The calls of one step, one row each, on the step's own axis ("" when it recorded none)."""
    mine = [c for c in (every if every is not None else calls(session)) if c.round == step]
    if not mine:
        return ""
    t0 = min(c.start for c in mine)
    total = max(c.end for c in mine) - t0
    rows = []
    for c in mine:
        name = f"{c.agent} · {c.call}" if c.call else c.agent
        title = f"{name}: {_duration(c.start - t0)} to {_duration(c.end - t0)}"
        rows.append(f'<div class="wf-row"><span class="wf-name">{esc(name)}</span>'
                    f"{_bar([(c.start, c.end, c.ok, title)], t0, total)}"
                    f'<span class="wf-tok">{esc(_tokens(c.prompt, c.cached, c.completion))} · '
                    f"{esc(_duration(c.end - c.start))}</span></div>")
    return _table(rows, t0, total, f"timeline · {_count(len(mine))} · {_duration(total)}", open_=open_)


def run_timeline(session: Session, unit: str) -> str:
    """Every agent's calls over the whole run, one row per agent, the steps' starts marked ("" with no call)."""
    every = calls(session)
    if not every:
        return ""
    t0 = min(c.start for c in every)
    total = max(c.end for c in every) - t0
    starts = sorted({min(c.start for c in every if c.round == r) for r in {c.round for c in every}})[1:]
    rows = []
    for agent in dict.fromkeys(c.agent for c in every):
        mine = [c for c in every if c.agent == agent]
        spans = [(c.start, c.end, c.ok, f"{unit} {c.round} · {c.call}: {_duration(c.end - c.start)}") for c in mine]
        cached = [c.cached for c in mine if c.cached is not None]
        tokens = _tokens(sum(c.prompt for c in mine), sum(cached) if cached else None,
                         sum(c.completion for c in mine))
        busy = sum(c.end - c.start for c in mine)
        rows.append(f'<div class="wf-row"><span class="wf-name">{esc(agent)}</span>'
                    f"{_bar(spans, t0, total, starts)}<span class=\"wf-tok\">{esc(tokens)} · "
                    f"{esc(_duration(busy))} in {_count(len(mine))}</span></div>")
    caption = f"timeline of the run · {_count(len(every))} · {_duration(total)} (lines: each {unit}'s start)"
    return _table(rows, t0, total, caption, open_=False)
