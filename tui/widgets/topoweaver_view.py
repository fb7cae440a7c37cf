"""TopoWeaver-R1's view, in place of the graph and manager panes when a run uses ``--strategy topoweaver``.

For the viewed turn: the validation badge (VALID, or the tag with the rule and the offending agent or
ref), the difficulty and N_max, the layered DAG drawn as columns (one per step, ``ref`` arrows under
each agent, dashed arrows for earlier turns' outputs), the density figures (eqs. 4–7, 14, 19, 21),
the tester's result, the whole turn history; beside them the plan's YAML, highlighted (and the raw
reply when it held no usable plan). Everything comes from the event stream through RunModel
(``method_events``, the rounds' graphs and agents, the test runs), so a replay draws the same.
The drawing functions are pure (model in, Rich text out); the widget only places them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Static

from core.routing.dytopo import KIND_CROSS, RoutingResult
from core.runtime import events as ev
from core.runtime.config import DomainName

from ..model import BADGE_WAITING, RunModel
from .footer import flow
from .method_views import MethodView, register_view
from .theme_colors import theme_color

if TYPE_CHECKING:  # the method's modules pull in the engine: the widget only reads their events
    from core.methods.topoweaver.events import PlanProposed, TurnEnded

    from .graph_pane import GraphPane

STRATEGY = "topoweaver"
MIN_COLUMN = 14  # the narrowest step column the DAG is drawn with
PLAN_EVENT = "topoweaver_plan"
TURN_EVENT = "topoweaver_turn"
CHECK_PHASE = "test"  # core.methods.topoweaver.PHASE_CHECK


@dataclass(frozen=True)
class Styles:
    ok: str = "bold green"
    bad: str = "bold red"
    warn: str = "yellow"
    muted: str = "dim"
    node: str = "bold"
    active: str = "bold underline yellow"
    edge: str = "blue"
    cross: str = "dim blue"
    head: str = "bold"


@dataclass
class Turn:
    number: int
    plan: PlanProposed | None = None
    ended: TurnEnded | None = None
    test: ev.TestRun | None = None
    routing: RoutingResult | None = None


def turns_of(model: RunModel) -> dict[int, Turn]:
    """Every turn the stream has told of, with its plan, its graph, its test run and its verdict."""
    turns = {n: Turn(n, routing=rv.routing) for n, rv in model.rounds.items()}
    for event in model.method_events:
        turn = turns.setdefault(getattr(event, "round", 0), Turn(getattr(event, "round", 0)))
        if event.type == PLAN_EVENT:
            turn.plan = event  # type: ignore[assignment]
        elif event.type == TURN_EVENT:
            turn.ended = event  # type: ignore[assignment]
    for run in model.test_runs:
        if run.round in turns:
            turns[run.round].test = run
    return turns


# --- drawings -----------------------------------------------------------------------------------------


def badge_lines(turn: Turn, styles: Styles, turns_total: int) -> list[Text]:
    plan = turn.plan
    head = Text(f"turn {turn.number}" + (f"/{turns_total}" if turns_total else "") + "  ", styles.head)
    if plan is None:
        head.append("the Orchestrator is writing the plan…", styles.muted)
        return [head]
    if plan.tag == "VALID":
        head.append(" VALID ", f"{styles.ok} reverse")
    else:
        head.append(f" {plan.tag} ", f"{styles.bad} reverse")
        if plan.rule.startswith("L"):
            head.append(f" {plan.rule}", styles.bad)
    if plan.difficulty:
        head.append(f"  {plan.difficulty} · N_max {plan.n_max}", styles.head)
    if plan.fallback:
        head.append("  fallback plan", styles.warn)
    lines = [head]
    if plan.tag != "VALID" and plan.message:
        lines.append(Text(plan.message, styles.bad))
        lines.append(Text("the fallback plan runs instead" if plan.fallback else "the invalid plan uses up this turn",
                          styles.muted))
    lines += [Text(w, styles.warn) for w in plan.warnings]
    if plan.notes:
        lines.append(Text(f"note: {plan.notes}", styles.muted))
    return lines


def _agent_style(model: RunModel, turn: int, agent: str, active: frozenset[str], styles: Styles) -> tuple[str, str]:
    """(mark, style) of an agent's state in that turn."""
    rv = model.rounds.get(turn)
    view = rv.agents.get(agent) if rv is not None else None
    if agent in active or (view is not None and view.streaming):
        return "◉", styles.active
    if view is None or view.status == BADGE_WAITING:
        return "○", styles.muted
    if view.status == ev.CallStatus.DONE:
        return "●", styles.ok
    return "✗", styles.bad


def _column(model: RunModel, turn: Turn, title: str, agents: list[dict[str, Any]], active: frozenset[str],
            styles: Styles, cross_into: dict[str, list[str]]) -> list[Text]:
    lines = [Text(title, styles.head)]
    for agent in agents:
        agent_id = str(agent.get("id", "?"))
        mark, style = _agent_style(model, turn.number, agent_id, active, styles)
        line = Text(f"{mark} ", style)
        line.append(agent_id, f"{styles.node} {style}" if style != styles.muted else styles.node)
        lines.append(line)
        lines.append(Text(f"  {agent.get('type', '')}", styles.muted))
        refs = [str(r) for r in agent.get("ref", [])]
        for ref in refs:
            dashed = "@" in ref
            lines.append(Text(f"  {'◀┄' if dashed else '◀─'} {ref}", styles.cross if dashed else styles.edge))
        for source in cross_into.get(agent_id, []):
            if source not in refs:
                lines.append(Text(f"  ◀┄ {source}", styles.cross))
    return lines


def dag_lines(model: RunModel, turn: Turn, width: int, active: frozenset[str], styles: Styles) -> list[Text]:
    """The layered DAG as columns, one per step; earlier turns' outputs in a first, dimmed column. Columns
    that do not fit beside each other go to a band below, whole (see ``bands``)."""
    plan = turn.plan
    if plan is None or not plan.steps:
        return []
    routing = turn.routing
    cross_into: dict[str, list[str]] = {}
    ghosts: list[str] = []
    if routing is not None:
        ghosts = list(routing.inactive)
        for e in routing.edges:
            if e.kind == KIND_CROSS:
                cross_into.setdefault(e.dst, []).append(e.src)
    columns: list[list[Text]] = []
    if ghosts:
        columns.append([Text("earlier", styles.muted), *[Text(f"┄ {g}", styles.cross) for g in ghosts]])
    for number, step in enumerate(plan.steps, start=1):
        columns.append(_column(model, turn, f"step {number}", step, active, styles, cross_into))
    rows: list[Text] = []
    for band in bands([max((line.cell_len for line in column), default=0) for column in columns], width):
        if rows:
            rows.append(Text(""))  # the next band of whole steps, under the last
        widths = band_widths([max((line.cell_len for line in columns[c]), default=0) for c in band], width)
        for i in range(max(len(columns[c]) for c in band)):
            row = Text()
            for j, c in enumerate(band):
                column = columns[c]
                text = _clip(column[i] if i < len(column) else Text(""), widths[j])
                if j < len(band) - 1:
                    text.pad_right(widths[j] - text.cell_len)
                    text.append(" ▸ " if i == 0 else "   ", styles.muted)
                row.append_text(text)
            rows.append(row)
    return rows


GAP = 3  # cells between two step columns (" ▸ " on the title row)


def bands(natural: list[int], width: int) -> list[list[int]]:
    """Columns (by index) in bands that fit ``width``: as many whole columns side by side as fit at their
    natural width (at least MIN_COLUMN), the rest in the next band below. A step is never split across
    lines; a pane too narrow for two has one column per band."""
    return flow([min(width, max(MIN_COLUMN, w)) for w in natural], width, gap=GAP)


def band_widths(natural: list[int], width: int) -> list[int]:
    """Each column's width in a band: its natural width, the room left shared out evenly."""
    widths = [min(width, max(MIN_COLUMN, w)) for w in natural]
    spare = width - sum(widths) - GAP * (len(widths) - 1)
    if spare > 0:
        widths = [w + spare // len(widths) for w in widths]
    return widths


def _clip(line: Text, width: int) -> Text:
    out = line.copy()
    if out.cell_len > width:
        out.truncate(width, overflow="ellipsis")
    return out


def density_lines(turn: Turn, styles: Styles) -> list[Text]:
    plan = turn.plan
    if plan is None or not plan.density:
        return []
    d = plan.density

    def num(key: str, digits: int = 2) -> str:
        value = d.get(key)
        return f"{value:.{digits}f}" if isinstance(value, int | float) and not isinstance(value, bool) else "?"

    pad = " " * len("density  ")
    first = Text("density  ", styles.head)
    first.append(f"|V| {d.get('V')} · |E| {d.get('E')} · s {d.get('s')} · ")
    cap = f"|V| {'≤' if d.get('within_cap') else '>'} N_max {d.get('n_max')}"
    first.append(cap, styles.ok if d.get("within_cap") else styles.bad)
    second = Text(f"{pad}S_node {num('S_node')} · S_edge {num('S_edge')} · S_depth {num('S_depth')}")
    third = Text(pad)
    third.append(f"S_complex {num('S_complex')}", styles.head)
    third.append(f" (α={num('alpha', 0)}; larger = sparser) · r_g {num('r_g')}")
    fourth = Text(f"{pad}cost/agent {num('cost', 1)}m (eq. 19) · S {num('S', 1)} (eq. 21)", styles.muted)
    return [first, second, third, fourth]


def check_lines(turn: Turn, domain: str, styles: Styles, checking: bool = False) -> list[Text]:
    """``checking``: the turn's check is running now."""
    who = "tester (sandbox)" if domain == "code" else "verifier"
    line = Text(f"{who}  ", styles.head)
    ended, test = turn.ended, turn.test
    if ended is None:
        if turn.plan is not None and not turn.plan.runs:
            line.append("nothing ran", styles.muted)
        elif checking:
            line.append("running the code against the tests…" if domain == "code" else "reading the verdict…",
                        styles.warn)
        else:
            line.append("waiting for the plan to run", styles.muted)
        return [line]
    if turn.plan is not None and not turn.plan.runs:
        line.append(f"no plan ran ({ended.status})", styles.bad)
        return [line]
    line.append(f"{'✓' if ended.passed else '✗'} {ended.status}", styles.ok if ended.passed else styles.bad)
    if ended.source_agent:
        line.append(f"  on {ended.source_agent}'s {'code' if domain == 'code' else 'answer'}", styles.muted)
    if test is not None and test.duration_s:
        line.append(f"  {test.duration_s:.2f}s", styles.muted)
    if ended.reward is not None:
        line.append(f"  r_e {ended.reward:+.1f}", styles.muted)
    lines = [line]
    if ended.failing_test:
        lines.append(Text(f"  failing: {' '.join(ended.failing_test.split())}", styles.bad))
    if not ended.passed and ended.log:
        lines += [Text(f"  {row}", styles.muted) for row in ended.log.strip().splitlines()[-3:]]
    return lines


def history_line(turns: dict[int, Turn], styles: Styles) -> Text:
    latest = [t.ended for _, t in sorted(turns.items()) if t.ended is not None]
    line = Text("history  ", styles.head)
    line.append(latest[-1].history if latest else "no turn has finished yet", styles.muted if not latest else "")
    return line


# --- the widget ---------------------------------------------------------------------------------------


@register_view(STRATEGY)
class TopoWeaverView(Horizontal, MethodView):
    """The plan of the viewed turn: left the badge, DAG, density, tester and history; right the YAML."""

    hides_manager = True  # no Manager decides: the Orchestrator's plan is in the view
    after_manager = True

    ALLOW_MAXIMIZE = True
    SCOPED_CSS = False
    DEFAULT_CSS = """
    TopoWeaverView { display: none; width: 8fr; height: 1fr; }
    TopoWeaverView > #tw-main { width: 3fr; padding: 0 1; }
    TopoWeaverView > #tw-yaml-pane { width: 2fr; padding: 0 1; }
    SwarmScreen.-narrow TopoWeaverView { width: 1fr; height: 28; layout: vertical; }
    SwarmScreen.-narrow TopoWeaverView > #tw-main { width: 1fr; height: 2fr; }
    SwarmScreen.-narrow TopoWeaverView > #tw-yaml-pane { width: 1fr; height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._key: tuple[object, ...] | None = None
        self._last: tuple[RunModel, int, frozenset[str]] | None = None  # what sync was last given
        self._plain = ""
        self.yaml_shown = ""  # the right column as plain text: the plan's YAML (and the raw reply)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="tw-main", classes="pane", can_focus=True):
            yield Static("", id="tw-body")
        with VerticalScroll(id="tw-yaml-pane", classes="pane", can_focus=True):
            yield Static("", id="tw-yaml")

    def on_mount(self) -> None:
        self.query_one("#tw-main").border_title = "TopoWeaver-R1"
        self.query_one("#tw-yaml-pane").border_title = "plan (YAML)"

    def copy_text(self) -> str:
        return self._plain + (f"\n\n{self.yaml_shown}" if self.yaml_shown else "")

    @property
    def text(self) -> str:
        return self._plain

    def _color(self, name: str, fallback: str) -> str:
        return theme_color(self.app, name, fallback)

    def _styles(self) -> Styles:
        return Styles(
            ok=f"bold {self._color('success', 'green')}",
            bad=f"bold {self._color('error', 'red')}",
            warn=self._color("warning", "yellow"),
            muted=self._color("text-muted", "grey50"),
            node=f"bold {self._color('foreground', 'white')}",
            active=f"bold underline {self._color('warning', 'yellow')}",
            edge=self._color("primary", "blue"),
            cross=f"italic {self._color('secondary', 'cyan')}",
            head=f"bold {self._color('accent', 'magenta')}",
        )

    def on_resize(self) -> None:
        """The pane's width changes with the layout around it, not only with the terminal: redraw the DAG for
        the width it has now (rows drawn for a wider pane would wrap mid-step)."""
        if self._last is not None:
            self.call_after_refresh(self._redraw)

    def _redraw(self) -> None:
        if self._last is not None:
            self.sync(*self._last[:2], active=self._last[2])

    def sync_view(self, model: RunModel, round_no: int, *, active: frozenset[str], graph: GraphPane,
                  state: Any = None) -> None:
        self.sync(model, round_no, active=active)

    @classmethod
    def steer_texts(cls, model: RunModel) -> dict[str, str]:
        """The steering dialog's plan editor starts from the latest plan's YAML."""
        plans = [e for e in model.method_events if getattr(e, "type", "") == PLAN_EVENT]
        return {"plan": str(getattr(plans[-1], "yaml", "")) if plans else ""}

    def sync(self, model: RunModel, round_no: int, *, active: frozenset[str] = frozenset()) -> None:
        self._last = (model, round_no, active)
        main = self.query_one("#tw-main", VerticalScroll)
        # The scrollbar's room is left whether or not it shows yet: rows drawn before it appeared would wrap.
        scrollbar = 0 if main.styles.scrollbar_gutter == "stable" or main.show_vertical_scrollbar else \
            main.styles.scrollbar_size_vertical
        width = max(30, main.scrollable_content_region.width - scrollbar)
        key = (model.rev, round_no, width, active, self.app.theme)
        if key == self._key:
            return
        self._key = key
        turns = turns_of(model)
        number = round_no if round_no in turns else max(turns, default=0)
        turn = turns.get(number)
        styles = self._styles()
        total = int(model.params.get("max_rounds", 0) or 0)
        sandbox = "sandbox: always on" if model.domain == DomainName.CODE else "answer check: the verifier"
        main.border_title = f"TopoWeaver-R1 · {sandbox}"
        lines: list[Text] = []
        if turn is None:
            lines.append(Text("waiting for the first turn", styles.muted))
        else:
            lines += badge_lines(turn, styles, total)
            dag = dag_lines(model, turn, width, active, styles)
            if dag:
                lines += [Text(""), *dag, Text("")]
            lines += density_lines(turn, styles)
            checking = turn.number == model.current and model.phase == CHECK_PHASE
            lines += check_lines(turn, model.domain, styles, checking)
        lines.append(history_line(turns, styles))
        self._plain = "\n".join(line.plain for line in lines)
        self.query_one("#tw-body", Static).update(Text("\n").join(lines))
        self._sync_yaml(turn, styles)

    def _sync_yaml(self, turn: Turn | None, styles: Styles) -> None:
        pane = self.query_one("#tw-yaml-pane", VerticalScroll)
        body: RenderableType
        plan = turn.plan if turn is not None else None
        self.yaml_shown = ""
        if plan is None:
            pane.border_title = "plan (YAML)"
            body = Text("no plan yet", styles.muted)
        elif turn is not None and plan.yaml and (plan.runs or plan.tag not in ("[NO_YAML_FOUND]",)):
            pane.border_title = f"turn {turn.number} · " + ("fallback plan (YAML)" if plan.fallback else "plan (YAML)")
            dark = self.app.current_theme.dark if self.app.current_theme is not None else True
            syntax = Syntax(plan.yaml, "yaml", theme="ansi_dark" if dark else "ansi_light", word_wrap=True,
                            background_color=self._color("surface", "default"))
            self.yaml_shown = plan.yaml
            if plan.runs and not plan.fallback:
                body = syntax
            else:
                raw = Text("\nthe Orchestrator's reply:\n", styles.head)
                raw.append(plan.raw.strip() or "(empty)", styles.muted)
                body = Group(syntax, raw)
                self.yaml_shown += "\n" + raw.plain
        else:
            pane.border_title = f"turn {turn.number if turn else '?'} · the Orchestrator's reply (no YAML)"
            body = Text(plan.raw.strip() or "(empty reply)", styles.muted)
            self.yaml_shown = body.plain
        self.query_one("#tw-yaml", Static).update(body)
