"""``swarm-tui --headless``: the same engine and event stream, printed instead of drawn.

Progress goes to stderr, the final answer to stdout (or, with --json, every event as a JSON line on
stdout). No Textual import here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from core.compose.assembly import RunIO, open_run
from core.compose.control_feed import ControlFileError, ControlScript, SteerCount
from core.compose.plan import BackendChoice, RunPlan
from core.demo.played import TESTS_LABEL, demo_answer_note, demo_banner, demo_expect_note
from core.evaluation.math_answers import answer_or_text, answers_equivalent
from core.llm.client import EndpointError
from core.llm.prices import cost_text
from core.llm.tokens import cached_share
from core.methods.catalogue import get_method_info, unit_position
from core.methods.registry import MethodError, format_options
from core.routing.dytopo import KIND_PINNED, RemovalReason, RoutingResult, edge_label
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.dispatch import EventTable
from core.runtime.engine import ForkPoint
from core.runtime.outcome import EndReason
from core.runtime.parsing import contract_warning
from core.runtime.textsafe import json_safe, printable
from core.sessions.store import SessionRecorder

EXIT_FAILED = 1
EXIT_CANCELLED = 130
EXIT_USAGE = 2  # as a bad flag: the run never started


def write_or_silence(out: TextIO, text: str) -> bool:
    """Write and flush; False when the reader has gone (e.g. piped into ``head``). The stream is then
    pointed at /dev/null, so neither later writes nor the interpreter's last flush raise again.
    Control characters (from a model or a file) are shown, never sent to the terminal (core.runtime.textsafe)."""
    try:
        out.write(printable(text))
        out.flush()
        return True
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
            os.close(devnull)
        return False


# What the progress lines say about each core event (ProgressPrinter's ``@PRINTS.on`` methods). The rest
# are left out on purpose: streamed text, the phases and calls under way (a line per call would drown the
# round's summary), descriptors and routed messages (the topology line sums them up), control changes and
# memory trims. A method's own event types print themselves (``progress_lines``).
PRINTS: EventTable[ProgressPrinter] = EventTable()
PRINTS.ignore(ev.AgentDelta, ev.PhaseStarted, ev.AgentStarted, ev.DescriptorsReady, ev.MessagesRouted,
              ev.ControlChanged, ev.MemoryTrimmed)


class ProgressPrinter:
    """Round-by-round progress lines: goal, edges with scores, who ran, tokens."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._ran: list[str] = []
        self._round_tokens = (0, 0)
        self._max_rounds = 0
        self._decider = "manager"  # who decides: the run's manager role (DMoA: the Summarizer)
        self._uses_tau = True  # tau and k_in mean something to the run's method
        self._unit = "round"  # what the method steps by (core.methods.registry.MethodInfo.unit)
        self._strategy = ""  # the run's method: its position reads "round 2/5", "call 1" (unit_position)
        self._tests = "tests"  # what a test verdict is about (the demo's own problem, when it plays that)

    def _line(self, text: str) -> None:
        # Made printable there. Progress is a side channel: the run goes on without it.
        write_or_silence(self.out, text + "\n")

    def __call__(self, event: ev.Event) -> None:
        if PRINTS.dispatch(self, event):
            return
        if callable(getattr(event, "progress_lines", None)):  # a method's own events say how they print
            for line in event.progress_lines():  # type: ignore[attr-defined]
                self._line(line)

    @PRINTS.on(ev.RunStarted)
    def on_run_started(self, e: ev.RunStarted) -> None:
        if e.demo:
            self._line("DEMO — scripted model server, no real model is answering")
        if e.demo_played:
            self._line(demo_banner(e.demo_played))
            self._tests = TESTS_LABEL
        self._max_rounds = int(e.params["max_rounds"])
        self._strategy = e.strategy
        self._decider = (e.manager or "manager").lower()
        try:
            info = get_method_info(e.strategy)
            self._uses_tau, self._unit = info.uses_tau, info.unit
        except MethodError:  # a session from a build with other methods
            self._uses_tau, self._unit = True, "round"
        team = ", ".join(e.workers) or f"{e.manager} (the agents join as it names them)"
        options = format_options(e.method_options)
        self._line(
            f"problem ({e.domain}, {e.protocol}): {e.problem.splitlines()[0][:100]}\n"
            f"model {e.model} at {e.base_url}; team: {team}\n"
            f"method {e.strategy}" + (f" with {options}" if options else "")
        )

    @PRINTS.on(ev.RoundStarted)
    def on_round_started(self, e: ev.RoundStarted) -> None:
        self._ran = []
        self._max_rounds = int(e.params["max_rounds"])
        values = f"  (tau {e.params['tau']:.2f}, k_in {e.params['k_in']})" if self._uses_tau else ""
        self._line(f"\n── {unit_position(self._strategy, e.round, self._max_rounds)}{values}")

    @PRINTS.on(ev.ManagerDecided)
    def on_manager_decided(self, e: ev.ManagerDecided) -> None:
        if e.plan:
            self._line(f"goal: {e.next_goal}")
        elif e.terminate:
            self._line(f"{self._decider}: terminate — {e.reasoning}")
        elif not e.next_goal:
            self._line(f"{self._decider}: continue — {e.reasoning}")
        else:
            self._line(f"{self._decider}: continue — next goal: {e.next_goal}")

    @PRINTS.on(ev.GoalReplaced)
    def on_goal_replaced(self, e: ev.GoalReplaced) -> None:
        self._line(f"goal (yours): {e.goal}")
        if e.replaced:
            self._line(f"  replaced the {self._decider}'s goal: {e.replaced}")

    @PRINTS.on(ev.TopologyBuilt)
    def on_topology_built(self, e: ev.TopologyBuilt) -> None:
        routing = RoutingResult.from_dict(e.routing)
        tag = " (re-routed)" if e.rerouted else ""
        removed: dict[str, int] = {}
        for r in routing.removed:  # DyTopo's reasons (k_in, cycle), and any a method adds (masked, pruned)
            removed[r.reason] = removed.get(r.reason, 0) + 1
        if routing.typed or not self._uses_tau:  # a method's own graph: edges by kind, no threshold
            edges = ", ".join(f"{x.src}→{x.dst} ({edge_label(x)})" for x in routing.edges) or "none"
            parts = [f"{len(routing.edges)} edges", *(f"removed {n} by {reason}" for reason, n in removed.items())]
            if routing.inactive:
                parts.append(f"not running: {', '.join(routing.inactive)}")
            self._line(f"graph{tag}: {edges}  [{'; '.join(parts)}]")
            if routing.tiers:
                self._line(f"order: {' | '.join(', '.join(tier) for tier in routing.tiers)}")
            return
        edges = ", ".join(f"{x.src}→{x.dst} {x.score:.2f}" + (" pinned" if x.kind == KIND_PINNED else "")
                          for x in routing.edges) or "none"
        steered = "".join(f", {removed[why]} {why}"
                          for why in (RemovalReason.CUT, RemovalReason.SILENCED) if removed.get(why))
        silent = f"; not running: {', '.join(routing.inactive)}" if routing.inactive else ""
        self._line(
            f"graph{tag}: {edges}  [{len(routing.edges)}/{routing.possible_edges} edges; "
            f"removed {removed.get('k_in', 0)} by k_in, {removed.get('cycle', 0)} by cycle{steered}{silent}]"
        )
        if routing.order:
            self._line(f"order: {' → '.join(routing.order)}")

    @PRINTS.on(ev.AgentFinished)
    def on_agent_finished(self, e: ev.AgentFinished) -> None:
        mark = "" if e.status == ev.CallStatus.DONE else f" [{e.status}]"
        self._ran.append(f"{e.agent}({e.call}){mark}")

    @PRINTS.on(ev.Notice)
    def on_notice(self, e: ev.Notice) -> None:
        self._line(f"  ! {e.message}")

    @PRINTS.on(ev.UserSteered)
    def on_user_steered(self, e: ev.UserSteered) -> None:
        target = f" {e.target}" if e.target else ""
        self._line(f"  > steered: {e.action}{target}" + ("" if e.accepted else f" refused ({e.reason})"))

    @PRINTS.on(ev.ParamsChanged)
    def on_params_changed(self, e: ev.ParamsChanged) -> None:
        self._line(f"  parameters now: {', '.join(f'{k}={e.params[k]}' for k in e.changed)}")

    @PRINTS.on(ev.RoundFinished)
    def on_round_finished(self, e: ev.RoundFinished) -> None:
        used = (e.prompt_tokens - self._round_tokens[0], e.completion_tokens - self._round_tokens[1])
        self._round_tokens = (e.prompt_tokens, e.completion_tokens)
        self._line(f"ran: {', '.join(self._ran)}")
        self._line(
            f"tokens: {used[0]} prompt + {used[1]} completion this {self._unit}; "
            f"{e.prompt_tokens + e.completion_tokens} in all"
        )

    @PRINTS.on(ev.TestRun)
    def on_test_run(self, e: ev.TestRun) -> None:
        self._line(f"{self._tests}: {e.outcome}" + (f" — {e.failing_test}" if e.failing_test else ""))

    @PRINTS.on(ev.RunFinished)
    def on_run_finished(self, e: ev.RunFinished) -> None:
        units = self._unit if e.rounds == 1 else f"{self._unit}s"
        self._line(
            f"\nfinished: {e.reason} — {e.detail}; {e.rounds} {units}, "
            f"{e.prompt_tokens} prompt + {e.completion_tokens} completion tokens; "
            f"prompt cache: {cached_share(e.cached_tokens, e.prompt_tokens)}"
            + (f"; {e.replies_copied} copied the reply template" if e.replies_copied else "")
        )
        self._line(cost_text(e.cost_usd, e.cost_unknown, e.cost_local))  # "cost $0.0042", "cost: free (local server)"
        if not e.final_answer.strip():  # never a made-up answer: say there is none
            self._line("no answer: no reply of the team passed the answer check")
        elif e.demo_played:
            self._line(demo_answer_note(e.demo_played))


class JsonLinesWriter:
    def __init__(
        self, out: TextIO, on_closed: Callable[[], None] | None = None, extra: dict[str, str] | None = None
    ) -> None:
        self.out = out
        self.on_closed = on_closed  # called once if the reader goes away: the run's output has nowhere to go
        self.closed = False
        self.extra = dict(extra or {})  # fields every line carries (a comparison's "method")

    def __call__(self, event: ev.Event) -> None:
        if self.closed:
            return
        # json.dumps escapes C0 controls; json_safe the C1 ones it leaves raw. printable() then finds nothing.
        data = {**event.to_dict(), **self.extra}
        if not write_or_silence(self.out, json_safe(json.dumps(data, ensure_ascii=False)) + "\n"):
            self.closed = True
            if self.on_closed is not None:
                self.on_closed()


class SaveWarning:
    """Says at once, not only at the end, when the autosave fails: the user can stop and fix it before
    more rounds are spent without a record."""

    def __init__(self, recorder: SessionRecorder, out: TextIO) -> None:
        self.recorder = recorder
        self.out = out
        self._told: str | None = None

    def __call__(self, event: ev.Event) -> None:
        error = self.recorder.error
        if error and error != self._told:
            write_or_silence(self.out, f"swarm-tui: warning: {error}\n")
        self._told = error


def say(text: str) -> None:
    """One line on stderr, its text made printable (it may quote a server or a model)."""
    write_or_silence(sys.stderr, text + "\n")


def check_expected(final_answer: str, expected: str) -> bool:
    """Does the run's answer match the expected one (math equivalence, not string equality)?"""
    return answers_equivalent(answer_or_text(final_answer), expected)


async def _run(
    problem: str,
    settings: Settings,
    demo: bool,
    json_lines: bool,
    save: Path | None,
    expect: str | None,
    fork: ForkPoint | None,
    control: str | None = None,
    on_saved: Callable[[Path], None] | None = None,
) -> int:
    try:  # a control file is read before the run: one that cannot be read fails at once
        script = ControlScript(control, lambda line: say(f"swarm-tui: {line}")) if control else None
    except ControlFileError as exc:
        say(f"swarm-tui: {exc}")
        return EXIT_USAGE
    try:
        plan = RunPlan.make(settings)
    except MethodError as exc:  # an option only the team can check: before any I/O
        say(f"swarm-tui: error: {exc}")  # worded as the command line's own errors
        return EXIT_USAGE
    embedder = plan.embedder.open()
    recorder = SessionRecorder(Path(settings.sessions_dir), path=save)
    writer = JsonLinesWriter(sys.stdout) if json_lines else ProgressPrinter(sys.stderr)
    steering = SteerCount()
    sinks = [writer, SaveWarning(recorder, sys.stderr), embedder.warm_up_on_first_reply(), steering]
    try:
        io = RunIO(sinks=sinks, recorder=recorder, embedder=embedder, steering=script,
                   backend=BackendChoice(demo=demo, on_status=lambda text: say(f"  {text}")))
        async with open_run(plan, problem, io, fork=fork) as run:
            engine = run.engine
            if isinstance(writer, JsonLinesWriter):
                writer.on_closed = engine.control.cancel
                if engine.spec.demo_played:  # the JSON stream says it in run_started; stderr's reader hears it too
                    say(demo_banner(engine.spec.demo_played))
            loop = asyncio.get_running_loop()
            try:
                loop.add_signal_handler(signal.SIGINT, engine.control.cancel)
                loop.add_signal_handler(signal.SIGTERM, engine.control.cancel)
            except (NotImplementedError, RuntimeError):  # not on the main thread, or not supported
                pass
            try:
                # MiniLM loads alongside the first model call (warm_up_on_first_reply): no request waits for torch.
                finished = await run.run()
            finally:
                if script is not None:
                    script.close()
    except EndpointError as exc:
        say(f"swarm-tui: {exc}")
        return EXIT_FAILED
    if steering.total:
        say(f"steering: {steering.describe()}")
    if recorder.error:
        say(f"swarm-tui: the session could not be saved: {recorder.error}")
    elif recorder.path is not None:
        say(f"session saved: {recorder.path}")
        if on_saved is not None:
            on_saved(recorder.path)
    if not json_lines:
        write_or_silence(sys.stdout, finished.final_answer + "\n")
    warning = contract_warning(finished.replies_parsed, finished.replies_total, finished.replies_copied)
    if warning:
        say(f"swarm-tui: {warning}")
    if finished.reason == EndReason.ERROR:
        say(f"swarm-tui: {finished.detail}")
        return EXIT_FAILED
    if finished.reason == EndReason.CANCELLED:
        return EXIT_CANCELLED
    if finished.replies_total > 0 and finished.replies_parsed == 0:
        return EXIT_FAILED  # nothing the model said was usable: not a success, whatever the answer looks like
    if expect is not None and finished.demo_played:
        say(demo_expect_note(expect, finished.demo_played))
        return EXIT_FAILED  # nothing was checked: not a success a script could mistake for a match
    if expect is not None:
        matches = await asyncio.to_thread(check_expected, finished.final_answer, expect)
        say(f"expected answer {expect!r}: {'matches' if matches else 'does NOT match'}")
        return 0 if matches else EXIT_FAILED
    return 0


def run_headless(
    problem: str,
    settings: Settings,
    *,
    demo: bool,
    json_lines: bool,
    save: Path | None,
    expect: str | None = None,
    fork: ForkPoint | None = None,
    control: str | None = None,
    on_saved: Callable[[Path], None] | None = None,
) -> int:
    """``control``: a steering script (core.compose.control_feed), a path or "-" for stdin; ``on_saved``: told
    where the session was saved (a fork's --compare opens it)."""
    return asyncio.run(_run(problem, settings, demo, json_lines, save, expect, fork, control, on_saved))
