"""The launch form: problem, method and its own options, domain, endpoint and model, demo and step-mode switches,
other methods to compare it with, Start. The fields follow the chosen method: DyTopo's protocol, tau and k_in
only for the methods that route by them, each method's options from its catalogue entry (with their ranges)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, Input, Label, Select, SelectionList, Static, Switch, TextArea
from textual.widgets.selection_list import Selection

from core.compose.plan import RunPlan
from core.demo.scripts import DEMO_PROBLEMS
from core.evaluation.sandbox import unisolated_refusal
from core.methods.catalogue import get_method_info, method_names
from core.methods.registry import MethodError
from core.runtime.config import (
    DOMAINS,
    PROTOCOLS,
    ConfigError,
    DomainName,
    Settings,
    check_setting,
    resolve_base_url,
)
from core.runtime.rosters import Team, builtin_team
from core.runtime.teams import team_from_table
from core.runtime.textsafe import printable

from ..widgets.footer import WrapFooter
from ..widgets.method_options import option_fields, read_options

SMALL_WIDTH, SMALL_HEIGHT = 100, 44  # below either: one-line fields (the form with its method options fits 40 rows)


def _team(settings: Settings, choice: str) -> Team:
    """The domain Select's choice: a built-in team (code, math, general) or a [team.NAME] table."""
    return team_from_table(choice, settings.teams[choice]) if choice in settings.teams else builtin_team(choice)


def _workers(settings: Settings, choice: str) -> int:
    return len(_team(settings, choice).workers)


def _method_info(name: str) -> Any:
    try:
        return get_method_info(name)
    except MethodError:
        return None


def routes_by_tau(name: str) -> bool:
    """DyTopo's round loop (DyTopo and the graph baselines): the protocol, tau and k_in fields mean something."""
    info = _method_info(name)
    return info is None or info.round_one_broadcast


def counts_max_rounds(name: str) -> bool:
    """The method's run is bounded by max_rounds (not by an option of its own, nor one unit whatever it says)."""
    info = _method_info(name)
    return info is None or (not info.limit_option and info.unit_limit(7) == 7)


def _with_options(settings: Settings, method: str, options: dict[str, Any]) -> Settings:
    """``settings`` with ``method``'s options typed in the form over its [strategy.NAME] table."""
    return replace(settings, strategy_options={
        **settings.strategy_options, method: {**settings.strategy_options.get(method, {}), **options}})


def _form_values(form: Screen[Any]) -> dict[str, str]:
    """The form's fields as typed (``form``: the launch screen), for _fields_to_settings."""
    return {
        "domain": str(form.query_one("#domain", Select).value),
        "strategy": str(form.query_one("#strategy", Select).value),
        "protocol": str(form.query_one("#protocol", Select).value),
        **{name: form.query_one(f"#{name}", Input).value for name in ("tau", "k_in", "max_rounds", "base_url",
                                                                      "model")},
        "execute_code": "on" if form.query_one("#execute_code", Switch).value else "off",
    }


def _fields_to_settings(base: Settings, values: dict[str, str], options: dict[str, Any] | None = None) -> Settings:
    """Form text -> validated Settings; ConfigError with one line on bad input."""
    def number(name: str, kind: type) -> float | int:
        text = values[name].strip()
        what = "a number" if kind is float else "a whole number"
        if not text:
            raise ConfigError(f"{name} is empty: type {what}")
        if name == "k_in":  # its range is the team's (1..N-1): validate(n_workers) words it below
            try:
                return int(text)
            except ValueError:
                raise ConfigError(f"k_in must be a whole number, got {text!r}") from None
        return check_setting(name, text, from_text=True)  # the bound and message a flag or a file gets

    # replace, not with_overrides: validating without the team size would word the k_in range wrongly.
    changes: dict[str, Any] = dict(
        strategy=values.get("strategy", base.strategy),
        protocol=values["protocol"],
        tau=number("tau", float),
        k_in=number("k_in", int),
        max_rounds=number("max_rounds", int),
        execute_code=values.get("execute_code", "on" if base.execute_code else "off") == "on",
        base_url=values["base_url"].strip() or None,
        model=values["model"].strip() or None,
    )
    settings = replace(base, **{k: v for k, v in changes.items() if v is not None})
    if options:  # the method's own fields, over its [strategy.NAME] table
        settings = _with_options(settings, settings.strategy, options)
    team = _team(base, values["domain"])
    settings = replace(settings, domain=DomainName(team.name), team=team.custom_name or None)
    settings.validate(n_workers=len(team.workers))
    try:  # the method and its options from the config file, checked for this team
        RunPlan.make(settings, team=team)
    except MethodError as exc:
        raise ConfigError(str(exc)) from None
    return settings


# What an endpoint error advises on the command line, said as the form does it (core.llm.client words its
# messages for the flags).
FORM_WORDS = (
    ("point elsewhere with --base-url URL (or OPENAI_BASE_URL), or try --demo",
     "edit the endpoint URL, or ctrl+o for the demo"),
    ("check the variable named by --api-key-env", "check the API key's variable (api_key_env in the config file)"),
    ("check --base-url (it usually ends in /v1) and --model",
     "check the endpoint URL (it usually ends in /v1) and the model"),
)


def in_form_words(message: str) -> str:
    for flags, form in FORM_WORDS:
        message = message.replace(flags, form)
    return message


def _fields(s: Settings, demo: bool, step: bool) -> ComposeResult:
    """The form's grid: method, domain (or a [team.NAME] table), DyTopo's protocol, tau and k_in, max_rounds,
    demo, endpoint, model and step mode, a label beside each."""
    with Grid(id="launch-grid"):
        yield Label("method")
        yield Select([(m, m) for m in method_names()], value=s.strategy, allow_blank=False, id="strategy")
        yield Label("domain")
        teams = [(f"team {name}", name) for name in s.teams]
        chosen = s.team if s.team in s.teams else s.domain
        yield Select([(str(d), str(d)) for d in DOMAINS] + teams, value=chosen, allow_blank=False, id="domain")
        yield Label("protocol", id="protocol-label", classes="tau-field")
        yield Select([(p, p) for p in PROTOCOLS], value=s.protocol, allow_blank=False, id="protocol",
                     classes="tau-field")
        yield Label("tau (0..1)", id="tau-label", classes="tau-field")
        yield Input(f"{s.tau}", id="tau", type="number", classes="tau-field")
        yield Label(f"k_in (1..{_workers(s, chosen) - 1})", id="k_in-label", classes="tau-field")
        yield Input(f"{s.k_in}", id="k_in", type="integer", classes="tau-field")
        yield Label("max_rounds (1..10)", id="max_rounds-label", classes="rounds-field")
        yield Input(f"{s.max_rounds}", id="max_rounds", type="integer", classes="rounds-field")
        yield Label("demo (scripted)", id="demo-label")
        yield Switch(demo, id="demo")
        yield Label("endpoint URL")
        yield Input(s.base_url or resolve_base_url(s), id="base_url")
        yield Label("model")
        yield Input(s.model or "", placeholder="first model the endpoint lists", id="model")
        yield Label("step mode", id="step-label")
        yield Switch(step, id="step", tooltip="Wait for a key (n) before each step of the run")


async def probe_endpoint(url: str, settings: Settings) -> tuple[str, bool, str]:
    """Ask ``url`` which models it serves: (what the form says, whether it answered with models, the first)."""
    from core.llm.client import EndpointError, LLMClient
    from core.runtime.config import resolve_api_key

    try:
        client = LLMClient(url, resolve_api_key(settings), timeout=10.0, first_byte_timeout=10.0, max_retries=0)
    except EndpointError as exc:  # a URL that cannot be used
        return f"✗ {exc}", False, ""
    try:
        models = await client.list_models()
    except EndpointError as exc:
        return f"✗ {exc}", False, ""
    finally:
        await client.close()
    if not models:
        return f"✗ {url} answered but lists no models: type a model name", False, ""
    shown = ", ".join(models[:6]) + (f" (+{len(models) - 6} more)" if len(models) > 6 else "")
    return f"✓ {url} serves {len(models)} model(s): {shown}", True, models[0]


class LaunchScreen(Screen[None]):
    BINDINGS = [
        Binding("ctrl+r", "start", "start", id="launch_start", tooltip="Start the swarm with these settings"),
        Binding("ctrl+t", "test_connection", "test", id="launch_test",
                tooltip="Ask the endpoint which models it serves"),
        Binding("ctrl+o", "toggle_demo", "demo", id="launch_demo",
                tooltip="Demo: the built-in scripted model server, no model needed"),
        Binding("ctrl+g", "toggle_execute", "tests", id="launch_execute",
                tooltip="Run the code and its tests in a sandbox after each round (code domain; off by default)"),
        Binding("ctrl+l", "open_sessions", "open", id="launch_sessions",
                tooltip="Open a saved session or a shipped example in the replay screen"),
        Binding("f1,question_mark", "help", "help", id="launch_help",
                tooltip="List every key and what it does (? types itself in a text field: use f1 there)"),
    ]

    def __init__(self, settings: Settings, *, demo: bool = False, problem: str = "", error: str = "",
                 step: bool = False, compare: bool = False) -> None:
        """``compare``: open with the cursor on the methods to compare (the palette's "compare")."""
        super().__init__()
        self.settings = settings
        self.demo = demo
        self.step = step
        self.start_comparing = compare
        self._options_for = ""  # the method whose option fields are shown
        self.problem = problem  # kept when the form comes back after a failed start
        self.error = in_form_words(error)
        self._k_in_lowered: tuple[int, int] | None = None  # (k_in typed, value shown) for a smaller team

    def compose(self) -> ComposeResult:
        s = self.settings
        with VerticalScroll(id="launch"):
            yield Static("[b]swarm-tui[/b] — a team of agents works on one problem, wired by the method you pick; "
                         "pick more methods under it to compare them side by side.", id="launch-intro")
            yield Label("Problem")
            yield TextArea(self.problem or (DEMO_PROBLEMS[s.domain] if self.demo else ""), id="problem",
                           soft_wrap=True)
            yield from _fields(s, self.demo, self.step)
            yield Grid(id="method-options")  # the method's own options, two to a row like the fields above
            with Horizontal(id="launch-execute"):
                yield Switch(s.execute_code, id="execute_code")
                yield Label("run code tests after each round (sandbox)", id="execute-label")
            with Horizontal(id="launch-buttons"):
                yield Button("Test connection", id="test")
                yield Button("Start", variant="primary", id="start")
            yield Static("", id="launch-status")
            # Below Start (a single run needs none of it): more methods to run beside the chosen one.
            with Horizontal(id="launch-compare"):
                yield Label("compare with", id="compare-label")
                yield SelectionList[str](*[Selection(f"  {m}", m, id=m) for m in method_names()], id="compare")
            # Each compared method's own options (the chosen one's are above): a comparison sets them all.
            yield Vertical(id="compare-options")
        yield Static("", id="launch-fold")  # at 80x24, when Start is below the fold: ctrl+r starts
        yield WrapFooter()

    def on_resize(self) -> None:
        """Below 100x44 every field is one line high (no borders) and the grid narrower, so the URL
        field shows the URL and Start stays in view at 80x24."""
        small = self.size.width < SMALL_WIDTH or self.size.height < SMALL_HEIGHT
        if small == self.has_class("-small"):
            self.call_after_refresh(self._say_fold)
            return
        self.set_class(small, "-small")
        for widget in self.query("Input, Select, Button, TextArea"):
            widget.compact = small  # type: ignore[attr-defined]
        self.call_after_refresh(self._say_fold)

    async def on_mount(self) -> None:
        self.on_resize()
        # Focus scrolls the form smoothly: the fold line follows the scroll, not only the focus change.
        self.watch(self.query_one("#launch", VerticalScroll), "scroll_y", lambda _y: self._say_fold(), init=False)
        await self._method_fields()
        self.query_one("#compare" if self.start_comparing else "#problem").focus()
        self._demo_changed(self.demo)
        self._execute_applies()
        self._k_in_follows_domain()
        if self.error:
            self._status(f"✗ {self.error}", "error")

    def _chosen(self) -> Team:
        return _team(self.settings, str(self.query_one("#domain", Select).value))

    # --- the method's fields ------------------------------------------------------------------
    @property
    def method(self) -> str:
        return str(self.query_one("#strategy", Select).value)

    async def _method_fields(self) -> None:
        """Show the fields the chosen method reads: DyTopo's protocol, tau and k_in only where it routes by them,
        max_rounds where it bounds the run, then the method's own options."""
        method = self.method
        if method == self._options_for:
            return
        self._options_for = method
        for widget in self.query(".tau-field"):
            widget.display = routes_by_tau(method)
        for widget in self.query(".rounds-field"):
            widget.display = counts_max_rounds(method)
        box = self.query_one("#method-options", Grid)
        await box.remove_children()
        info = _method_info(method)
        fields = option_fields(info, self.settings.strategy_options.get(method, {}))
        small = self.has_class("-small")
        for widget in fields:
            if hasattr(widget, "compact"):
                widget.compact = small
        box.display = bool(fields)
        await box.mount(*fields)
        unit = info.substep if info is not None else "phase"
        self.query_one("#step", Switch).tooltip = f"Wait for a key (n) before each {unit} of the run"

    @on(Select.Changed, "#strategy")
    async def strategy_changed(self) -> None:
        await self._method_fields()
        self._execute_applies()
        self.call_after_refresh(self._say_fold)

    # --- demo --------------------------------------------------------------------------------
    def _demo_changed(self, on: bool) -> None:
        for name in ("#base_url", "#model", "#test"):
            self.query_one(name).disabled = on
        if on:
            self._fill_demo_problem()

    def _fill_demo_problem(self) -> None:
        area = self.query_one("#problem", TextArea)
        if not area.text.strip() or area.text in DEMO_PROBLEMS.values():
            area.text = DEMO_PROBLEMS[self._chosen().name]

    @on(Switch.Changed, "#demo")
    def demo_switched(self, event: Switch.Changed) -> None:
        self._demo_changed(event.value)

    @on(Select.Changed, "#domain")
    def domain_changed(self) -> None:
        if self.query_one("#demo", Switch).value:
            self._fill_demo_problem()
        self._execute_applies()
        self._k_in_follows_domain()

    def _k_in_follows_domain(self) -> None:
        """k_in is 1..N-1 for the chosen team: the label says so, a value above it is lowered (and comes
        back when a larger team is chosen again), so switching domain never leaves an invalid form."""
        upper = len(self._chosen().workers) - 1
        self.query_one("#k_in-label", Label).update(f"k_in (1..{upper})")
        box = self.query_one("#k_in", Input)
        try:
            current = int(box.value.strip())
        except ValueError:
            return
        if current > upper:
            self._k_in_lowered = (current, upper)
            box.value = str(upper)
        elif self._k_in_lowered is not None and current == self._k_in_lowered[1]:
            wanted = self._k_in_lowered[0]
            box.value = str(min(wanted, upper))
            self._k_in_lowered = None if wanted <= upper else (wanted, upper)

    def _execute_applies(self) -> None:
        """Code tests only exist for code tasks: the switch is greyed out for the other domains."""
        code = self._chosen().name == "code"
        self.query_one("#execute_code", Switch).disabled = not code
        info = _method_info(self.method)  # in the method's own unit: DMoA's step, TopoWeaver-R1's turn
        unit = info.unit if info is not None else "round"
        label = f"run code tests after each {unit} (sandbox)" + ("" if code else " — code domain only")
        self.query_one("#execute-label", Label).update(label)

    def action_toggle_demo(self) -> None:
        switch = self.query_one("#demo", Switch)
        switch.value = not switch.value

    def action_toggle_execute(self) -> None:
        switch = self.query_one("#execute_code", Switch)
        if switch.disabled:
            self.notify("code tests only run for the code domain", severity="warning")
            return
        switch.value = not switch.value

    def action_open_sessions(self) -> None:
        self.app.open_session_picker()  # type: ignore[attr-defined]

    def action_help(self) -> None:
        from .help import HelpScreen

        self.app.push_screen(HelpScreen(self))

    # --- test connection ---------------------------------------------------------------------
    def _status(self, text: str, severity: str = "") -> None:
        status = self.query_one("#launch-status", Static)
        status.update(printable(text))  # it may quote the server (model names, errors)
        status.set_classes(f"-{severity}" if severity else "")

    @on(Button.Pressed, "#test")
    def action_test_connection(self) -> None:
        url = self.query_one("#base_url", Input).value.strip() or resolve_base_url(self.settings)
        self._status(f"asking {url} for its models…")
        self._probe(url)

    class ProbeDone(Message):
        def __init__(self, text: str, ok: bool, first_model: str = "") -> None:
            super().__init__()
            self.text, self.ok, self.first_model = text, ok, first_model

    @work(exclusive=True, group="probe", exit_on_error=False)
    async def _probe(self, url: str) -> None:
        """Worker: asks the endpoint, then posts ProbeDone (no widget is touched here)."""
        self.post_message(self.ProbeDone(*await probe_endpoint(url, self.settings)))

    def on_launch_screen_probe_done(self, message: ProbeDone) -> None:
        self._status(in_form_words(message.text), "ok" if message.ok else "error")
        model_input = self.query_one("#model", Input)
        if message.first_model and not model_input.value.strip():
            model_input.value = message.first_model

    # --- start -------------------------------------------------------------------------------
    @on(SelectionList.SelectedChanged, "#compare")
    async def compare_changed(self) -> None:
        """The picked methods marked with ✓ (not by colour alone), and a row of options for each of them."""
        listed = self.query_one("#compare", SelectionList)
        picked = set(listed.selected)
        for name in method_names():
            listed.replace_option_prompt(name, f"✓ {name}" if name in picked else f"  {name}")
        await self._compare_fields()

    async def _compare_fields(self) -> None:
        box = self.query_one("#compare-options", Vertical)
        await box.remove_children()
        for method in self.compared()[1:]:
            fields = option_fields(_method_info(method), self.settings.strategy_options.get(method, {}))
            if not fields:
                continue
            small = self.has_class("-small")
            for widget in fields:
                if hasattr(widget, "compact"):
                    widget.compact = small
            await box.mount(Label(f"{method}'s options", classes="compare-options-title"),
                            Grid(*fields, id=f"compare-options-{method}", classes="method-options"))

    def compared_options(self) -> dict[str, dict[str, Any]]:
        """The options typed for each compared method but the chosen one (those go with its own fields)."""
        out: dict[str, dict[str, Any]] = {}
        for method in self.compared()[1:]:
            found = self.query(f"#compare-options-{method}")
            if found:
                out[method] = read_options(_method_info(method), found.first())
        return out

    def on_descendant_focus(self) -> None:
        """At 80x24 Start may be below the fold: say ctrl+r starts whenever it is out of sight."""
        self.call_after_refresh(self._say_fold)

    def _say_fold(self) -> None:
        start = self.query_one("#start", Button)
        scroll = self.query_one("#launch", VerticalScroll)
        hidden = not scroll.region.contains_region(start.region) if start.region.area else True
        fold = self.query_one("#launch-fold", Static)
        fold.update("Start is further down: ctrl+r starts from anywhere in the form" if hidden else "")
        fold.display = hidden

    def compared(self) -> list[str]:
        """The methods of a comparison started from here: the chosen one first, then those picked (none: one run)."""
        picked = [m for m in self.query_one("#compare", SelectionList).selected if m != self.method]
        return [self.method, *picked] if picked else []

    @on(Button.Pressed, "#start")
    def action_start(self) -> None:
        problem = self.query_one("#problem", TextArea).text.strip()
        demo = self.query_one("#demo", Switch).value
        if not problem:
            self._status("✗ type a problem first (or switch demo on for an example)", "error")
            self.notify("the problem is empty", severity="error")
            return
        try:
            options = read_options(_method_info(self.method), self)
            settings = _fields_to_settings(self.settings, _form_values(self), options)
        except ConfigError as exc:
            self._status(f"✗ {exc}", "error")
            self.notify(str(exc), severity="error")
            return
        refused = unisolated_refusal() if settings.execute_code and settings.domain == DomainName.CODE else ""
        if refused and not settings.allow_unisolated_code:  # before the run, not at its first test run
            self._status("✗ code tests need isolation", "error")
            self.notify(refused, severity="error", timeout=20)
            return
        step = self.query_one("#step", Switch).value
        methods = self.compared()
        for method, options in self.compared_options().items():  # each compared method's own fields
            settings = _with_options(settings, method, options)
        app: Any = self.app
        if methods:
            app.start_compare(problem, settings, methods, demo=demo, step=step)
        else:
            app.start_run(problem, settings, demo=demo, step=step)
