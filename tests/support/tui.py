"""Shared helpers for the TUI tests (no tests here).

``pinned_demo_events`` runs the real engine once per test session against the scripted demo server
(real openai client over HTTP, real MiniLM) and pins everything that varies between runs
(timestamps, latencies, run id, port), so apps fed from it draw the same frame every time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings

T0 = 1_763_712_000.0  # a fixed wall clock for the pinned events
PINNED_URL = "http://127.0.0.1:8000/v1"


def big_team(workers: int) -> dict[str, Any]:
    """A [team.NAME] table of ``workers`` experts (general domain), as a user would write it."""
    return {
        "domain": "general",
        "manager": {"name": "Manager", "role": "Leads."},
        "workers": [{"name": f"Expert{i:02d}", "role": f"Covers aspect {i} of the question."} for i in range(workers)],
    }


async def _collect(domain: str, protocol: str = "phased", workers: int = 0) -> list[ev.Event]:
    from core.compose.plan import BackendChoice
    from core.compose.runner import build_engine, open_backend
    from core.llm.embeddings import shared_embedder

    team: dict[str, Any] = {"team": "big", "teams": {"big": big_team(workers)}, "max_rounds": 2} if workers else {}
    settings = Settings(domain=domain, sessions_dir="/nonexistent", protocol=protocol, **team)
    events: list[ev.Event] = []
    with ScriptedServer(demo_script) as server:
        backend = await open_backend(settings, BackendChoice(server=server, demo=True))
        engine = build_engine(DEMO_PROBLEMS[domain], settings, backend, [events.append], embedder=shared_embedder())
        try:
            await engine.run()
        finally:
            await backend.close()
    return events


def pin(events: list[ev.Event]) -> list[ev.Event]:
    out: list[ev.Event] = []
    for i, event in enumerate(events):
        changes: dict[str, Any] = {"ts": T0 + i * 0.01}
        if isinstance(event, ev.AgentFinished):
            changes["latency_s"] = 1.25
        if isinstance(event, ev.RunStarted):
            changes.update(run_id="pinned", base_url=PINNED_URL)
        out.append(dataclasses.replace(event, **changes))
    return out


@functools.cache
def pinned_demo_events(domain: str = "code", protocol: str = "phased") -> tuple[ev.Event, ...]:
    """The demo run's events, pinned. Runs in a thread: the caller may already be inside a loop."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        events = pool.submit(asyncio.run, _collect(domain, protocol)).result(timeout=300)
    return tuple(pin(events))


@functools.cache
def pinned_team_events(workers: int) -> tuple[ev.Event, ...]:
    """A demo run of a user team of ``workers`` experts (general domain, two rounds), pinned."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        events = pool.submit(asyncio.run, _collect("general", workers=workers)).result(timeout=300)
    return tuple(pin(events))


def index_of(events: tuple[ev.Event, ...], predicate: Callable[[ev.Event], bool], start: int = 0) -> int:
    return next(i for i in range(start, len(events)) if predicate(events[i]))


def mid_round_cut(events: tuple[ev.Event, ...]) -> int:
    """A position in round 2's work phase: the Developer is done, the Researcher mid-stream."""
    round2 = index_of(events, lambda e: isinstance(e, ev.RoundStarted) and e.round == 2)
    work = index_of(events, lambda e: isinstance(e, ev.PhaseStarted) and e.phase == ev.Phase.WORK, round2)
    researcher = index_of(
        events, lambda e: isinstance(e, ev.AgentDelta) and e.agent == "Researcher" and e.call == "work", work
    )
    return researcher + 12


def mid_round_events(events: tuple[ev.Event, ...]) -> list[ev.Event]:
    """Round 2, phase C, frozen in a state that does not depend on how the parallel streams happened
    to interleave: the Developer done, the Researcher 12 chunks in, the Tester 4 chunks in."""
    round2 = index_of(events, lambda e: isinstance(e, ev.RoundStarted) and e.round == 2)
    work = index_of(events, lambda e: isinstance(e, ev.PhaseStarted) and e.phase == ev.Phase.WORK, round2)
    out = list(events[: work + 1])
    later = events[work + 1 :]

    def calls(agent: str) -> list[ev.Event]:
        return [e for e in later if getattr(e, "agent", None) == agent and getattr(e, "round", 0) == 2]

    developer = calls("Developer")
    out += developer[: 1 + next(i for i, e in enumerate(developer) if isinstance(e, ev.AgentFinished))]
    for agent, chunks in (("Researcher", 12), ("Tester", 4)):
        mine = calls(agent)
        out += [mine[0], *[e for e in mine if isinstance(e, ev.AgentDelta)][:chunks]]
    return out


def frozen_clock() -> float:
    return T0 + 42.0


def app_for(request: Any, **injected: Any) -> Any:
    """A SwarmApp opening ``request`` (a tui.cli.launch request, or tui.opening.OpenScreen) as tests want it: no
    theme state file and no MiniLM load, unless ``injected`` says otherwise."""
    from tui.app import SwarmApp

    return SwarmApp(request, **{"state_path": None, "load_embedder": False, **injected})


def demo_run(settings: Settings, problem: str | None = None, *, step: bool = False, save: Path | None = None,
             **injected: Any) -> Any:
    """An app running ``problem`` (default: the settings' domain's demo problem) live against the in-process demo
    server, as fast as it goes."""
    from tui.cli.launch import OpenRun

    problem = DEMO_PROBLEMS[settings.domain] if problem is None else problem
    return app_for(OpenRun(problem, settings, demo=True, step=step, save=save, demo_chunk_delay=0.0), **injected)


def form_app(settings: Settings, *, demo: bool = False, **injected: Any) -> Any:
    """An app on the launch form (``demo``: its demo switch on); a run started from it is not driven unless
    ``start_engine=True``."""
    from tui.cli.launch import OpenRun

    return app_for(OpenRun(None, settings, demo=demo), **{"start_engine": False, **injected})


def replay_of(path: Path, settings: Settings | None = None, **request: Any) -> Any:
    """An app replaying the session saved at ``path`` (``request``: demo, demo_chunk_delay for its forks)."""
    from core.sessions.store import load_session
    from tui.cli.launch import OpenReplay

    return app_for(OpenReplay(load_session(path), path, settings=settings, **request))


def feed_app(domain: str = "code", *, size_hint: str = "", **kwargs: Any) -> Any:
    """An app showing a run screen that no engine drives: tests post the pinned events to it."""
    from tui.cli.launch import OpenRun

    settings = Settings(domain=domain, sessions_dir=str(kwargs.pop("sessions_dir", "/nonexistent")),
                        keymap=kwargs.pop("keymap", {}))
    return app_for(OpenRun(DEMO_PROBLEMS[domain], settings, demo=True), clock=frozen_clock, start_engine=False,
                   **kwargs)


async def post_events(app: Any, pilot: Any, events: Any) -> None:
    """Send events through the same bridge the engine uses, then let the handlers and a frame run."""
    from tui.bridge import EventBridge

    bridge = EventBridge(app)
    for event in events:
        bridge(event)
    await pilot.pause()
    await pilot.pause(0.1)  # one delta frame (25 fps) at least


def live_app(tmp: Path, **kwargs: Any) -> Any:
    """An app running the real engine against the in-process demo server, as fast as it goes."""
    domain = kwargs.pop("domain", "code")
    settings = Settings(domain=domain, sessions_dir=str(tmp), max_rounds=kwargs.pop("max_rounds", 5),
                        keymap=kwargs.pop("keymap", {}))
    return demo_run(settings, **kwargs)


async def wait_for(pilot: Any, condition: Callable[[], bool], *, timeout: float = 60.0) -> None:
    """Pause the pilot until the condition holds (a hang guard, not a speed check)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            raise AssertionError("condition never became true")
        await pilot.pause(0.05)


async def quiet_second(pilot: Any, seconds: float = 1.0) -> tuple[float, int]:
    """(CPU seconds this process used, messages every widget handled) while nobody touches the app for
    ``seconds``: an idle screen handles its timers' few ticks and nothing else."""
    import time

    from textual.message_pump import MessagePump

    handled = 0
    dispatch = MessagePump._dispatch_message

    async def counting(self: MessagePump, message: Any) -> None:
        nonlocal handled
        handled += 1
        await dispatch(self, message)

    MessagePump._dispatch_message = counting  # type: ignore[method-assign]
    try:
        cpu = time.process_time()
        await pilot.pause(seconds)
        return time.process_time() - cpu, handled
    finally:
        MessagePump._dispatch_message = dispatch  # type: ignore[method-assign]


def press_at_once(app: Any, *keys: str) -> None:
    """Keys as a fast typist sends them: all queued before the app handles the first (Pilot's press waits
    for the app to go idle after each)."""
    from textual import events

    for key in keys:
        event = events.Key(key, None)
        event.set_sender(app)
        app._driver.send_message(event)


def says(request: Any, text: str) -> bool:
    """Whether any message of a recorded request holds ``text``."""
    return any(text in str(m.get("content", "")) for m in request.messages)


async def paused_after_round_one(pilot: Any, model: Any) -> None:
    """A stepped run: round 1 done and decided, paused before round 2 starts."""
    await wait_for(pilot, lambda: model.control_status == "paused")
    await pilot.press("N")  # round 1, then wait before round 2 starts
    await wait_for(pilot, lambda: model.current == 1 and model.rounds[1].decision is not None
                   and model.control_status == "paused")
