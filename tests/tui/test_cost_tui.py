"""The run header shows what the run's calls cost beside the tokens (issue 43, cost): a live run on a priced
model name, through the real engine and the scripted server."""

from __future__ import annotations

import asyncio
from pathlib import Path

from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import demo_script
from core.demo.server import ScriptedServer
from core.runtime.config import Settings
from tests.support.tui import app_for
from tui.cli.launch import OpenRun


async def test_the_header_shows_the_cost_beside_the_tokens(tmp_path: Path) -> None:
    from tui.widgets.header import RunHeader

    with ScriptedServer(demo_script, ServerBehaviour(model="gpt-4o-mini")) as server:
        # The scripted server is on 127.0.0.1: price it as a hosted endpoint would be.
        settings = Settings(strategy="single", base_url=server.base_url, model="gpt-4o-mini",
                            price_local_endpoints=True, sessions_dir=str(tmp_path))
        app = app_for(OpenRun("Write add(a, b).", settings))
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(600):  # a guard against hangs, not a timing
                screen = getattr(app, "swarm_screen", None)
                if screen is not None and screen.model.finished is not None:
                    break
                await asyncio.sleep(0.05)
            await pilot.pause()
            screen = app.swarm_screen
            assert screen.model.finished is not None and (screen.model.finished.cost_usd or 0) > 0
            text = screen.query_one(RunHeader).render().plain
    assert " tok, $" in text, text  # e.g. "1,234 tok, $0.000123"
