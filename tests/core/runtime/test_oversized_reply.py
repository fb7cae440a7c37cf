"""An oversized reply costs a bounded record: its first million characters are kept with a marker naming its
full size, deltas stop there too, and the session is always saved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.demo.behaviour import ServerBehaviour
from core.demo.scripts import demo_script
from core.demo.server import RequestInfo, ScriptedServer
from core.runtime import events as ev
from core.sessions.store import load_session
from tui.entry import main

HUGE = 3_000_000


def _flood(info: RequestInfo) -> str:
    if info.call == "single":
        return "x" * HUGE
    return demo_script(info)


def test_a_huge_reply_is_kept_bounded_and_the_session_saves(tmp_path: Path, capsys: Any) -> None:
    # A model allowed 400k tokens: the reply is within what the call asked for (core.llm.bounds would cut a
    # reply past 1.5 x max_tokens first), so the client's own cap on what it keeps is what bounds it here.
    (tmp_path / "none.toml").write_text("[swarm]\nwork_call = { max_tokens = 400000 }\n"
                                        "manager_call = { max_tokens = 400000 }\n")
    with ScriptedServer(_flood, ServerBehaviour(chunk_chars=65536)) as server:
        save = tmp_path / "run.json"
        code = main(["--headless", "--base-url", server.base_url, "--strategy", "single", "--domain", "general",
                     "--save", str(save), "--config", str(tmp_path / "none.toml"), "Say x."])
    err = capsys.readouterr().err
    assert "could not be saved" not in err and code == 0, err[-500:]
    session = load_session(save)
    finished = [e for e in session.replay_events() if isinstance(e, ev.AgentFinished)]
    assert finished and len(finished[0].raw) < 1_000_200
    assert f"reply cut by swarm-tui at 1,000,000 of its {HUGE:,} characters" in finished[0].raw
    log = save.with_suffix(".events.jsonl")
    sizes = save.stat().st_size + (log.stat().st_size if log.exists() else 0)
    assert sizes < 10 * 1_000_000  # a few copies of the kept million characters, whatever was sent
