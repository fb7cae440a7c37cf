"""Issue 44 item 4: an agent whose descriptors copied the reply template has no routed edges that round, and
the graph pane says why (a copy states nothing, so nothing of it is embedded)."""

from __future__ import annotations

from typing import Any

from core.compose.plan import BackendChoice
from core.compose.runner import build_engine, open_backend
from core.demo.copycat import copycat_script
from core.demo.scripts import DEMO_PROBLEMS, demo_script
from core.demo.server import ScriptedServer
from core.runtime import events as ev
from core.runtime.config import Settings
from core.runtime.scripted import RequestInfo
from tests.support.tui import feed_app, pin, post_events
from tui.widgets.graph_pane import GraphPane

COPYCAT = "Tester"


def _tester_copies(info: RequestInfo) -> str:
    """The demo team, but the Tester copies its descriptor shape, re-ask and all."""
    if info.role == COPYCAT and info.call == ev.CallKind.DESCRIPTORS:
        return copycat_script(info)
    return demo_script(info)


async def _events(embedder: Any) -> list[ev.Event]:
    settings = Settings(domain="code", max_rounds=2, sessions_dir="/nonexistent")
    events: list[ev.Event] = []
    with ScriptedServer(_tester_copies) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        try:
            engine = build_engine(DEMO_PROBLEMS["code"], settings, backend, [events.append], embedder=embedder)
            await engine.run()
        finally:
            await backend.close()
    return pin(events)


async def test_the_graph_pane_says_why_a_copier_has_no_routed_edges(embedder: Any) -> None:
    events = await _events(embedder)
    graphs = [e for e in events if isinstance(e, ev.TopologyBuilt)]
    assert graphs and all(COPYCAT not in (edge["src"], edge["dst"]) for g in graphs for edge in g.routing["edges"])
    assert any(g.routing["edges"] for g in graphs)  # the others are routed as ever
    app = feed_app("code")
    async with app.run_test(size=(160, 48)) as pilot:
        await post_events(app, pilot, events)
        text = app.swarm_screen.query_one(GraphPane).text
    assert f"no routed edges for {COPYCAT}: the descriptors copied the reply template" in text
    assert "Developer:" not in text.split("no routed edges for", 1)[1]  # only the copier is named
