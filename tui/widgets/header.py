"""The run header (problem, domain, model, round, phase, status, tokens, elapsed) and the params bar."""

from __future__ import annotations

import re
from pathlib import Path

from textual.content import Content
from textual.widgets import Static

from core.demo.played import demo_header
from core.llm.prices import usd_text
from core.llm.tokens import cached_share
from core.runtime.config import DEFAULT_STRATEGY
from core.runtime.control import ControlMode

from ..model import RunModel


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


_NOISE = re.compile(r"^(from\s+\S+\s+import\b|import\s+\S|#|@|\"\"\"\s*$|\'\'\'\s*$|```)")
_DEF = re.compile(r"^(?:async\s+)?def\s+(\w+\s*\(.*?\)\s*(?:->\s*[^:]+)?)\s*:?\s*$")


def _first_sentence(lines: list[str]) -> str:
    """The first sentence of the docstring that opens ``lines`` (up to its end, a blank line, an
    example or a full stop)."""
    words: list[str] = []
    for number, raw in enumerate(lines):
        line = raw.strip()
        body = line if number > 0 else line[3:]  # the opening quotes do not close it
        closes = body.endswith(('"""', "\'\'\'"))
        line = line.strip('"').strip("'").strip()
        if not line or line.startswith(">>>"):
            if words or closes:
                break
            continue
        words.append(line)
        if closes or re.search(r"[.!?](\s|$)", line):
            break
    text = " ".join(words)
    match = re.search(r"^(.*?[.!?])(\s|$)", text)
    return (match.group(1) if match else text).strip()


def headline(problem: str) -> str:
    """The problem's first meaningful line for the header: not an import, a comment or a decorator. A
    code prompt that starts with a function (HumanEval) gives its signature and its docstring's first
    sentence: ``has_close_elements(numbers: List[float], threshold: float) -> bool — Check if …``."""
    lines = problem.strip().splitlines()
    skip_to = -1
    for index, raw in enumerate(lines):
        line = raw.strip()
        if index <= skip_to or not line or _NOISE.match(line):
            continue
        constant = re.match(r"^\w+\s*=\s*(\"\"\"|\'\'\')", line)
        if constant and line.count(constant.group(1)) == 1:  # a module string constant: skip all of it
            skip_to = next((i for i in range(index + 1, len(lines)) if constant.group(1) in lines[i]), len(lines))
            continue
        match = _DEF.match(line)
        if match is None:
            return line
        signature = " ".join(match.group(1).split())
        doc = _first_sentence(lines[index + 1 :]) if index + 1 < len(lines) and (
            '"""' in lines[index + 1] or "\'\'\'" in lines[index + 1]) else ""
        return f"{signature} — {doc}" if doc else signature
    return lines[0].strip() if lines else ""


def status_line(model: RunModel, elapsed: float, replay: str = "", width: int | None = None) -> Content:
    """``replay``: the replay's own state ("replay paused", ...), shown instead of the recorded status
    until the recorded run ends (a paused replay must not read "running"). ``width``: the cells there
    are; when the full line does not fit, a compact one keeps the run's state whole (the domain, the
    server's description, the reason's detail and the phase's detail go first)."""
    full = _status_line(model, elapsed, replay, compact=False)
    if width is None or full.cell_length <= width:
        return full
    short = _status_line(model, elapsed, replay, compact=False, detail=False)
    if short.cell_length <= width:  # all but the reason's detail fits: that is cut (with an ellipsis)
        return full
    compact = _status_line(model, elapsed, replay, compact=True)
    if compact.cell_length <= width:
        return compact
    # Each field's short form before anything is cut mid-word: "paused" (the position says before what), then
    # the line without the team and the server (the header's first line and the bar name them).
    for lean in (False, True):
        short = _status_line(model, elapsed, replay, compact=True, short=True, lean=lean)
        if short.cell_length <= width:
            return short
    # A long status (an endpoint error): shorten it so the rest of the state stays in view.
    short = _status_line(model, elapsed, replay, compact=True, short=True)
    room = width - (short.cell_length - len(_status_text(model, replay, compact=True, short=True))) - 1
    return _status_line(model, elapsed, replay, compact=True, short=True, status_room=max(16, room))


def _unit(model: RunModel) -> str:
    """What the run's method steps by (round, step, turn)."""
    info = model.method_info
    return info.unit if info is not None else "round"


def _status_text(model: RunModel, replay: str, *, compact: bool, detail: bool = True, short: bool = False) -> str:
    unit = _unit(model)
    status = model.status_text
    rv = model.round_view()
    if status == "paused" and (rv is None or rv.finished) and not short:
        status = f"paused before {unit} {model.current + 1}"
    if model.finished is not None:
        status = f"finished: {model.finished.reason}" + ("" if compact or not detail else f" — {model.finished.detail}")
    elif replay:
        status = replay
    return status


def _team_label(model: RunModel, compact: bool) -> str:
    """The run's team: a user team by its name (and domain), a built-in one by its domain."""
    team = model.run.team if model.run is not None else {}
    name = team.get("name") if team else None
    if not name:
        return model.domain or "-"
    return str(name) if compact else f"team {name} ({model.domain or '-'})"


def _tokens(model: RunModel, compact: bool = False) -> str:
    """The token figure, with the prompt tokens the server served from its prefix cache when it says (a server
    that says nothing adds nothing here: the headless summary and the compare rows say "not reported");
    ``compact``: the share alone, so the state keeps its room on a small terminal."""
    cost = _cost(model)
    copied = (f", {model.copied} copied the template" if not compact else f", {model.copied} copies") if (
        model.copied) else ""  # replies that copied the reply template (issue 44): not parsed, not work
    if model.cached_tokens is None:
        return f"{model.tokens:,} tok{cost}{copied}"
    if compact and model.prompt_tokens:
        return f"{model.tokens:,} tok, {100 * model.cached_tokens / model.prompt_tokens:.0f} % cached{cost}{copied}"
    return f"{model.tokens:,} tok, {cached_share(model.cached_tokens, model.prompt_tokens)}{cost}{copied}"


def _cost(model: RunModel) -> str:
    """What the calls cost so far, beside the tokens (core.llm.prices): ", $0.0042", or ", cost ?" when a
    model has no price; nothing on a free (local) server, like a cache that says nothing."""
    if model.cost_unknown:
        return ", cost ?"
    return f", {usd_text(model.cost_usd)}" if model.cost_usd > 0 else ""


def _status_line(model: RunModel, elapsed: float, replay: str, *, compact: bool, detail: bool = True,
                 status_room: int | None = None, short: bool = False, lean: bool = False) -> Content:
    who = ("DEMO" if compact else "DEMO (scripted server)") if model.demo else (model.model_name or "model ?")
    phase = f" · phase {model.phase}" if model.phase else ""
    if model.phase_detail and not compact and detail:
        phase = f"{phase} ({model.phase_detail})"
    status = _status_text(model, replay, compact=compact, detail=detail, short=short)
    if status_room is not None and len(status) > status_room:
        status = status[: status_room - 1] + "…"
    style = "$error" if model.error else "$success" if model.finished else "$accent" if replay else (
        "$warning" if model.mode == ControlMode.STEP else "")
    parent = model.run.parent if model.run is not None else None
    fork = f"fork of {Path(str(parent.get('session', '?'))).name} @ round {parent.get('round', '?')}" if parent else ""
    fork_part: tuple[str, str] = (fork, "bold $accent")
    fork_after: list[str | tuple[str, str]] = [" · ", fork_part] if fork else []
    fork_before: list[str | tuple[str, str]] = [fork_part, " · "] if fork else []
    team_part: list[str | tuple[str, str]] = [] if lean else [
        " · ", (_team_label(model, compact=True), "bold"), " · ", (who, "bold $accent" if model.demo else "bold")]
    if compact:  # the state first: it is what a glance at a small terminal is for
        return Content.assemble(
            (status, f"bold {style}".strip()),
            phase,
            " · ",
            (model.position, "bold"),
            f" · {_tokens(model, compact=True)} · {_clock(elapsed)}",
            *team_part,
            *fork_after,
        )
    return Content.assemble(
        (_team_label(model, compact=False), "bold"),
        " · ",
        *fork_before,
        (who, "bold $accent" if model.demo else "bold"),
        " · ",
        (model.position, "bold"),
        # Tokens and time before the status: a finished run's reason is long and would push them out.
        f" · {_tokens(model)} · {_clock(elapsed)} · ",
        (status, f"bold {style}".strip()),
        phase,
    )


class RunHeader(Static):
    """Two lines: the problem's first line, then the run's state."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.show_full = False
        self._shown: tuple[str, tuple[object, ...]] | None = None

    def sync(self, model: RunModel, elapsed: float, replay: str = "") -> None:
        problem = model.problem.strip()
        first = headline(problem) if problem else "starting…"
        body = problem if self.show_full else first
        self.set_class(self.show_full, "-full")
        # A demo playing its own problem says so before the problem: whatever follows is not about this one.
        played = (demo_header(model.demo_played) + " ", "bold $warning") if model.demo_played else ""
        problem_line = Content.assemble(("▍", "$accent"), played, (body, "bold"))
        status = status_line(model, elapsed, replay, self.content_region.width or None)
        # The full problem goes below the status line, so the state stays in view.
        lines = (status, problem_line) if self.show_full else (problem_line, status)
        content = Content("\n").join(lines)
        # sync runs every frame; an update (a screen-wide layout pass) only when the text or its styles change.
        shown = (content.plain, tuple(content.spans))
        if shown != self._shown:
            self._shown = shown
            self.update(content)


class ParamsBar(Static):
    def sync(self, model: RunModel, view_round: int | None, extra: str = "", tests: str = "",
             live: bool = True) -> None:
        """``tests`` says whether code tests run after each round ("on" / "off"; "" to leave it out);
        ``live`` False (a replay): the latest round shown is not "live"."""
        p = model.params
        if not p:
            self.update("")
            return
        tau, k_in = float(p["tau"]), p["k_in"]
        rv = model.round_view(view_round) if view_round is not None else None
        used = rv.used_params() if rv is not None else None
        if used is not None:  # an earlier round: the values it ran with, not today's
            tau, k_in = used
        width = self.content_region.width or None
        for compact in (False, True):
            line = Content.from_markup("  ".join(self._parts(model, view_round, tau, k_in, used is not None, extra,
                                                             tests, live, compact)))
            if width is None or line.cell_length <= width:
                break
        self.update(line)

    @staticmethod
    def _parts(model: RunModel, view_round: int | None, tau: float, k_in: object, own: bool, extra: str,
               tests: str, live: bool, compact: bool) -> list[str]:
        p = model.params
        unit = _unit(model)  # round, step or turn: what the run's method counts
        if compact:  # a small terminal: the values, hardly any labels
            viewing = (f"{unit[0].upper()}{view_round}/{model.current}{' (its values)' if own else ''}"
                       if view_round is not None else f"{'live ' if live else ''}{unit[0].upper()}{model.current}")
        else:
            viewing = (
                f"viewing {unit} {view_round} of {model.current}{' (its tau, k_in)' if own else ''} (, . to browse)"
                if view_round is not None
                else f"{'live ' if live else ''}{unit} {model.current}"
            )
        routed = model.routes_by_tau
        parts = [
            *([] if model.strategy == DEFAULT_STRATEGY else [f"method [b]{model.strategy}[/]"]),
            *([f"tau [b]{tau:.2f}[/]", f"k_in [b]{k_in}[/]"] if routed else []),
            # max_rounds only where it bounds the run (not single's one call, single-turn's one round).
            # ... in the method's unit: DMoA's "max steps 20" (its L_max), TopoWeaver-R1's "max turns 2".
            *([f"max [b]{p['max_rounds']}[/]" if compact else
               f"max_rounds [b]{p['max_rounds']}[/]" if unit == "round" else f"max {unit}s [b]{p['max_rounds']}[/]"]
              if model.unit_limit == p["max_rounds"] else []),
            *([(f"[b]{model.protocol or '-'}[/]" if compact else f"protocol [b]{model.protocol or '-'}[/]")]
              if routed else []),
            # A replay's own state (playing, paused) is its part of the bar, not the recorded run's mode.
            *([f"[b]{model.mode}[/]" if compact else f"mode [b]{model.mode}[/]"] if live else []),
            *([(f"tests [b]{tests}[/]" if compact else f"tests: [b]{tests}[/]")] if tests else []),
            # The user's steering actions taken so far (each is marked where it applied).
            *([f"✎[b]{model.steered_count}[/]" if compact else f"steered [b]{model.steered_count}[/]"]
              if model.steered_count else []),
            viewing,
        ]
        if extra:
            parts.append(extra)
        return parts

