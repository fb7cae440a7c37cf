"""Plan once, then open: what a run is, settled from the settings before anything connects.

A ``RunPlan`` holds the team (resolved here, and only here: a user team, a team file's table or the
domain's built-in team), the method (built here, its options checked against that team), the run's
starting control parameters and where its embeddings come from. Every face makes one plan per run and
hands it to ``core.compose.assembly.open_run``: the CLI's check, the launch form, the MCP server's
validation and a comparison's check make the plan that then runs, so a bad team or option is one line
before any connection, and nothing is resolved or built twice.

This module stays light (no LLM client, no demo server): the launch form imports it for its first frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.llm.embeddings import Embedder, shared_embedder
from core.methods.catalogue import build_method
from core.runtime.config import Settings
from core.runtime.control import ControlMode, Params, RunControl
from core.runtime.engine import Method
from core.runtime.rosters import Team
from core.runtime.teams import resolve_team

if TYPE_CHECKING:  # the demo server is imported by a demo run only (http.server: start-up time)
    from core.demo.server import ScriptedServer


@dataclass(frozen=True)
class EmbedderSpec:
    """Which MiniLM a run embeds with (settings embedding_model_path, embedding_int8)."""

    model_path: str | None = None
    int8: bool = False

    @classmethod
    def of(cls, settings: Settings) -> EmbedderSpec:
        return cls(settings.embedding_model_path, settings.embedding_int8)

    def open(self) -> Embedder:
        """The process-wide embedder for this model (loaded once however many runs use it)."""
        return shared_embedder(self.model_path, int8=self.int8)


def embedder_for(settings: Settings) -> Embedder:
    """The shared embedder the settings name: what a face holds before it makes any plan (warm-up)."""
    return EmbedderSpec.of(settings).open()


def run_params(settings: Settings) -> Params:
    """The live parameters a run starts from (tau, k_in, max_rounds)."""
    return Params(settings.tau, settings.k_in, settings.max_rounds)


def new_control(settings: Settings, n_workers: int, *, step: bool = False) -> RunControl:
    """A run's control, in auto mode or (``step``) stopping at each boundary: the one place one is made."""
    return RunControl(run_params(settings), n_workers, mode=ControlMode.STEP if step else ControlMode.AUTO)


def team_of(settings: Settings) -> Team:
    """The team the settings name (ConfigError, one line, if none): the one place a team is resolved."""
    return resolve_team(settings)


@dataclass(frozen=True)
class BackendChoice:
    """Where a run's calls go when the face shares no backend: the configured endpoint, or the scripted
    demo server (``demo``; ``server``: one the face started; ``demo_chunk_delay`` paces its replies).
    ``on_status`` hears "contacting URL … N s" while the endpoint is awaited."""

    demo: bool = False
    demo_chunk_delay: float = 0.0
    server: ScriptedServer | None = None
    on_status: Callable[[str], None] | None = None


@dataclass(frozen=True)
class RunPlan:
    """One run, settled: its settings, team, built method, starting parameters and embedder."""

    settings: Settings
    team: Team
    method: Method
    params: Params
    embedder: EmbedderSpec

    @classmethod
    def make(cls, settings: Settings, *, team: Team | None = None, method: Method | None = None) -> RunPlan:
        """The plan for ``settings``: its team (``team`` when the face chose it already, e.g. MCP's named
        team) and its method (``method`` when the face holds one, e.g. a trainer's) built with the options
        of ``settings.strategy``. Raises ConfigError (the team) or MethodError (an option), one line each."""
        team = team or team_of(settings)
        if method is None:
            method = build_method(settings.strategy, settings.strategy_options.get(settings.strategy), team)
        return cls(settings, team, method, run_params(settings), EmbedderSpec.of(settings))

    def new_control(self, *, step: bool = False) -> RunControl:
        """A control for this plan's run (auto, or ``step`` mode), sized for its team."""
        return new_control(self.settings, len(self.team.workers), step=step)
