"""A live comparison on the compare screen: the runs go on in a worker of the app's loop; every key acts
on the comparison's RunControls (one per method). Enter opens a method's full run screen, fed the same
events, on top; esc comes back and the run goes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import events
from textual.binding import Binding

from core.compose.compare import ComparePlan, Comparison
from core.compose.plan import BackendChoice
from core.llm.urls import redact_url
from core.runtime.config import resolve_base_url
from core.runtime.control import ControlMode
from core.sessions.compare_record import CompareRecord, CompareRow, RowState

from ..bindings import RUN_BINDINGS
from ..cli.launch import DEMO_PACE
from .compare import CompareScreen, MethodBridge
from .run import RunScreen


def _placeholder_record(plan: ComparePlan, demo: bool) -> CompareRecord:
    """What the header and columns show until the endpoint answers and the comparison starts."""
    s = plan.settings
    return CompareRecord(
        problem=plan.problem, domain=s.domain, model=s.model or "…", base_url="demo" if demo else
        redact_url(resolve_base_url(s)), demo=demo,
        rows=[CompareRow(m) for m in plan.methods],
    )


class LiveCompareScreen(CompareScreen):
    def __init__(self, plan: ComparePlan, *, backend: BackendChoice = BackendChoice(demo_chunk_delay=DEMO_PACE),
                 save: Path | None = None) -> None:
        """``backend``: the endpoint, or the demo server (its pace, and one a test started)."""
        super().__init__(_placeholder_record(plan, backend.demo))
        self.plan = plan
        self.backend = backend
        self.demo = backend.demo
        self.save = save
        self.comparison: Comparison | None = None
        self.error = ""

    def started(self) -> None:
        self.run_worker(self._run(), name="compare", group="compare", exclusive=True, exit_on_error=False)

    async def _run(self) -> None:
        client_loaded = getattr(self.app, "client_loaded", None)
        if client_loaded is not None:
            await client_loaded()
        from core.compose.plan import embedder_for
        from core.compose.runner import open_backend
        from core.llm.client import EndpointError

        settings = self.plan.settings
        try:
            backend = await open_backend(settings, self.backend)
        except EndpointError as exc:
            self.fail_all(str(exc))
            return
        embedder = embedder_for(settings)
        comparison = Comparison(
            self.plan, backend, embedder, sessions_dir=Path(settings.sessions_dir), record_path=self.save,
            sinks_for=lambda method: [MethodBridge(self, method), embedder.warm_up_on_first_reply()],
        )
        self.adopt(comparison)
        try:
            await comparison.run()
        finally:
            await backend.close()
        if comparison.save_error:
            self.notify(comparison.save_error, severity="error", timeout=20)
        else:
            failed = comparison.failed
            said = f"; {len(failed)} failed: {', '.join(r.method for r in failed)}" if failed else ""
            self.notify(f"comparison done{said}; saved: {comparison.record_path}",
                        severity="warning" if failed else "information", timeout=10)
        self.tick()

    def adopt(self, comparison: Comparison) -> None:
        """From now on the columns and the summary show the comparison's own rows and record."""
        self.comparison = comparison
        self.record = comparison.record
        self.rows = comparison.rows
        for method, column in self.columns.items():
            column.row = comparison.rows[method]
            column.changes += 1
        self.show_header()

    def fail_all(self, message: str) -> None:
        """The endpoint could not be opened: every column says why; nothing ran."""
        self.error = message
        for row in self.rows.values():
            row.state, row.reason, row.verdict = RowState.FAILED, message, "failed"
        for column in self.columns.values():
            column.changes += 1
        self.notify(message, severity="error", timeout=30)
        self.tick()

    @property
    def running(self) -> bool:
        return any(not row.state.ended for row in self.rows.values()) and not self.error

    def cancel(self) -> None:
        if self.comparison is not None:
            self.comparison.cancel()

    # --- keys ---------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back_all":
            return False  # a live run only goes forward
        return super().check_action(action, parameters)

    def _controls(self) -> dict[str, Any] | None:
        if self.comparison is None:
            self.notify("the comparison has not started yet", severity="warning", timeout=3)
            return None
        return self.comparison.controls

    def action_toggle_pause(self) -> None:
        controls = self._controls()
        if controls is None:
            return
        pause = any(c.mode == ControlMode.AUTO for c in controls.values())
        for control in controls.values():
            control.pause() if pause else control.resume()
        self.notify("every method pauses at its next step" if pause else "every method runs on", timeout=3)

    def _step(self, methods: list[str]) -> None:
        controls = self._controls()
        if controls is None:
            return
        if all(controls[m].mode == ControlMode.AUTO for m in methods):
            self.notify("not in step mode: space pauses every method, then n steps them", severity="warning",
                        timeout=4)
            return
        for method in methods:
            controls[method].step_round()

    def action_step_all(self) -> None:
        self._step(list(self.columns))

    def action_step_focused(self) -> None:
        self._step([self.focused_method])

    def action_back_all(self) -> None:
        self.notify("p steps back in a replay; a live run only goes forward", severity="warning", timeout=3)

    def action_open_column(self) -> None:
        method = self.focused_method
        if self.comparison is None:
            self.notify("the comparison has not started yet", severity="warning", timeout=3)
            return
        screen = CompareRunScreen(self, method)
        self.detail, self.detail_method = screen, method
        self.app.push_screen(screen)


class CompareRunScreen(RunScreen):
    """One method of a live comparison on the full run screen: its history first, then its events as they
    come. Its keys act on that method's RunControl; esc goes back to the columns (the run goes on)."""

    BINDINGS = [
        *RUN_BINDINGS,
        Binding("escape", "back_to_compare", "back", id="compare_detail_back",
                tooltip="Back to the compare columns (the run goes on)"),
    ]

    def __init__(self, compare: LiveCompareScreen, method: str) -> None:
        comparison = compare.comparison
        assert comparison is not None
        super().__init__(compare.plan.problem, comparison.plans[method].settings,
                         backend=compare.backend, start=False,
                         plan=comparison.plans[method])
        self.compare = compare
        self.method = method
        self.control = comparison.controls[method]
        self.recorder = comparison.recorders.get(method, self.recorder)
        self.model.mode = self.control.mode

    def on_mount(self) -> None:
        # Textual calls RunScreen's and SwarmScreen's on_mount after this one: they draw what is applied here.
        for event in list(self.compare.events.get(self.method, [])):
            self.apply_event(event, render=False)

    def action_back_to_compare(self) -> None:
        self.compare.detail = None
        self.app.pop_screen()

    def action_request_quit(self) -> None:
        self.compare.action_request_quit()

    def on_unmount(self, event: events.Unmount) -> None:
        # Leaving the full view must not cancel the method's run: Textual would call RunScreen's on_unmount
        # (which cancels its run) after this one, unless the default is prevented.
        event.prevent_default()
