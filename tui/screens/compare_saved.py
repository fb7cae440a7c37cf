"""Saved runs on the compare screen: each column replays its session. n and p move every column one step of
its own (a round, a step, a turn) forward or back; N moves only the focused one; enter opens the focused
run in the replay screen (what-if where its method supports it), esc comes back."""

from __future__ import annotations

from core.compose.compare_saved import SavedRun, fold_events, record_of_runs, same_problem
from core.runtime import events as ev
from core.runtime.dispatch import positions
from core.sessions.compare_record import CompareRow, RowState

from ..model import RunModel
from .compare import CompareScreen


class SavedCompareScreen(CompareScreen):
    def __init__(self, runs: list[SavedRun], source: str = "") -> None:
        super().__init__(record_of_runs(runs))
        self.runs = {run.label: run for run in runs}
        self.source = source
        self.replayed = {run.label: run.events for run in runs}
        self.cursor = {run.label: 0 for run in runs}

    def started(self) -> None:
        played = [run.session.metadata.demo_played for run in self.runs.values() if run.session.metadata.demo_played]
        if played:
            self.demo_played = played[0]
            self.show_header()
        for label in self.runs:
            self.seek(label, len(self.replayed[label]))  # opens on each run's end: the answers side by side
        if not same_problem(list(self.runs.values())):
            self.notify("these runs are not of the same problem: compare with care", severity="warning", timeout=10)

    def stops(self, label: str) -> list[int]:
        """Cursor positions that end one step of the method: before each next round starts, and the end."""
        events = self.replayed[label]
        return [*(i for i in positions(events, ev.RoundStarted) if i > 1), len(events)]

    def seek(self, label: str, position: int) -> None:
        events = self.replayed[label]
        position = max(0, min(len(events), position))
        column = self.columns[label]
        if position < self.cursor[label]:
            column.model = RunModel()
            column.model.embeddings_ready = True
            column.latest_agent = ""
            self.cursor[label] = 0
        for event in events[self.cursor[label]: position]:
            column.apply(event)
        self.cursor[label] = position
        column.row = self._row_at(label, position)
        column.changes += 1

    def _row_at(self, label: str, position: int) -> CompareRow:
        """The column's figures as of its cursor; at the end, the saved row (its verdict included)."""
        events = self.replayed[label]
        if position >= len(events):
            return self.runs[label].row
        row = fold_events(label, events[:position]).row
        if row.state == RowState.RUNNING:
            row.state = RowState.REPLAY  # recorded, shown part way through
        return row

    def _step(self, labels: list[str], forward: bool) -> None:
        for label in labels:
            here = self.cursor[label]
            stops = self.stops(label)
            if forward:
                target = next((s for s in stops if s > here), here)
            else:
                target = next((s for s in reversed(stops) if s < here), 0)
            self.seek(label, target)
        self.tick()

    def action_step_all(self) -> None:
        self._step(list(self.runs), forward=True)

    def action_step_focused(self) -> None:
        self._step([self.focused_method], forward=True)

    def action_back_all(self) -> None:
        self._step(list(self.runs), forward=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_pause":
            return False  # nothing runs in a replay
        return super().check_action(action, parameters)

    def action_toggle_pause(self) -> None:
        self.notify("nothing is running here: n and p step every replay, N the focused one", timeout=3)

    def action_open_column(self) -> None:
        from .replay import ReplayScreen

        run = self.runs[self.focused_method]
        replay = ReplayScreen(list(run.events), source=str(run.path), session=run.session)
        replay.back_to = (self, getattr(self.app, "swarm_screen", None))
        self.app.swarm_screen = replay  # type: ignore[attr-defined]
        self.app.push_screen(replay)

    def action_reload(self) -> None:
        """Back from a replay opened here (the app's close_replay calls this on the screen below)."""
        self.tick()
