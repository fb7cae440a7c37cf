"""Every method as an inspect_ai solver, ``swarm_tui/swarm``, found through inspect's extension entry point
(``[project.entry-points.inspect_ai]`` in pyproject.toml):

    inspect eval TASK --model MODEL --solver swarm_tui/swarm -S method=dytopo [-S max_rounds=3 -S k=2 ...]

Each sample runs one swarm on its input, with the eval's own model: the swarm's calls go through inspect's
agent bridge (core.interop.inspect_bridge), so inspect's limits, retries, usage accounting and logs apply.
The final answer is the sample's output for the task's scorer; the rounds' graphs, the Manager's decisions,
steering and the end are ``info`` events in the sample's transcript, and a summary is in its metadata
(``swarm``), so ``inspect view`` shows how the team got there.

Solver options (``-S``): ``method`` (any registered method, default dytopo), ``domain`` (code, math or general;
default the sample metadata's ``domain``, else general), ``team``, ``max_rounds``, ``tau``, ``k_in``,
``protocol``, ``execute`` (the code's tests after each round), ``time_budget``, ``max_calls``, ``max_cost``;
any other ``-S KEY=VALUE`` is an option of the method (``swarm-tui strategies`` lists them).
"""

from __future__ import annotations

from typing import Any

from inspect_ai.log import transcript
from inspect_ai.model import ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

from core.compose.assembly import RunIO, open_run
from core.compose.plan import RunPlan
from core.interop.inspect_bridge import MODEL, inspect_endpoint
from core.interop.story import StoryItem, story_item, story_summary
from core.llm.prices import cost_text
from core.runtime import events as ev
from core.runtime.config import Settings, settings_from
from core.runtime.config_file import load_settings

NAME = "swarm_tui/swarm"
RUN_KEYS = ("domain", "team", "max_rounds", "tau", "k_in", "protocol", "time_budget", "max_calls", "max_cost")


def run_settings(method: str, values: dict[str, Any], options: dict[str, Any], domain: str) -> Settings:
    """The run's settings: the user's config file, then the solver's options; the sample's model at the
    bridge's endpoint (set when the sample runs)."""
    given = {k: v for k, v in values.items() if v is not None}
    base = load_settings()
    settings = settings_from({"domain": domain, **given, "strategy": method, "model": MODEL}, base)
    if options:
        settings = settings_from({"strategy_options": {**settings.strategy_options, method: options}}, settings)
    settings.validate()
    return settings


class TranscriptSink:
    """The swarm's own story in the sample's transcript (core.interop.story): model calls are inspect's own
    events already."""

    def __init__(self) -> None:
        self.items: list[StoryItem] = []

    def __call__(self, event: ev.Event) -> None:
        item = story_item(event)
        if item is not None:
            self.items.append(item)
            transcript().info(item[1], source=item[0])


def swarm(method: str = "dytopo", domain: str | None = None, team: str | None = None,
          max_rounds: int | None = None, tau: float | None = None, k_in: int | None = None,
          protocol: str | None = None, execute: bool = False, time_budget: float | None = None,
          max_calls: int | None = None, max_cost: float | None = None, **options: Any) -> Solver:
    """A swarm of ``method`` on each sample (see the module's docstring); a bad option fails at once."""
    values: dict[str, Any] = {"team": team, "max_rounds": max_rounds, "tau": tau, "k_in": k_in,
                              "protocol": protocol, "time_budget": time_budget, "max_calls": max_calls,
                              "max_cost": max_cost, "execute_code": execute or None}
    checked = run_settings(method, values, options, domain or "general")
    RunPlan.make(checked)  # a typo in the team or an option ends the eval now

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        chosen = domain or str((state.metadata or {}).get("domain") or "general")
        settings = run_settings(method, values, options, chosen)
        story = TranscriptSink()
        async with inspect_endpoint() as (url, seen):
            settings = settings_from({"base_url": url}, settings)
            # The plan's embedder: the process-wide MiniLM the settings name (loaded once for every sample).
            async with open_run(RunPlan.make(settings), state.input_text, RunIO(sinks=[story])) as run:
                finished = await run.run()
        if seen.limit is not None:  # the sample's own limit stopped the swarm: inspect ends the sample
            raise seen.limit
        state.output = ModelOutput.from_content(model=MODEL, content=finished.final_answer)
        state.metadata["swarm"] = {
            "method": method, "domain": chosen, "reason": str(finished.reason), "detail": finished.detail,
            "rounds": finished.rounds, "answer_source": finished.answer_source,
            "prompt_tokens": finished.prompt_tokens, "completion_tokens": finished.completion_tokens,
            "cost": cost_text(finished.cost_usd, finished.cost_unknown, finished.cost_local),
            **story_summary(story.items),
            "bridge_errors": seen.errors[:5],
        }
        return state

    return solve


swarm_solver = solver(NAME)(swarm)  # registered as swarm_tui/swarm when inspect loads the entry point
