"""What ``swarm-tui strategies --fidelity`` advises is accepted and does what it says: the convergence stop
(a deviation from DyTopo's paper, where only the Manager halts, arXiv 2602.06039 §3.5.2) is switched off
by the very config line the list prints, and a run then goes on past the round where its outputs repeat."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.demo.server import ScriptedServer
from core.methods.fidelity import deviations
from core.runtime.config import ConfigError
from core.runtime.config_file import load_config_file
from core.runtime.events import CallKind
from core.runtime.scripted import RequestInfo
from tui.entry import main


def _advice() -> str:
    """The TOML line the fidelity list gives to switch the convergence stop off (after "config: ")."""
    (entry,) = [d for d in deviations() if "convergence_threshold" in d.restore]
    assert entry.restore.startswith("config: ")
    return entry.restore.removeprefix("config: ")


def _same_every_round(info: RequestInfo) -> str:
    """Workers repeat themselves (their outputs converge at round 2); the Manager always wants another round."""
    if info.role == "Manager":
        return json.dumps({"goal": "Keep refining.", "terminate": False, "reasoning": "Not yet.", "final_answer": ""})
    if info.call == CallKind.DESCRIPTORS:
        return json.dumps({"query": "I need the implementation.", "key": f"I provide {info.role} notes."})
    return json.dumps({"public": f"{info.role}: the same answer.\n```python\nanswer = 42\n```", "private": {},
                       "query": "I need code.", "key": "I give notes."})


def _run(tmp_path: Path, config_text: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    config = tmp_path / "config.toml"
    config.write_text(config_text, encoding="utf-8")
    with ScriptedServer(_same_every_round) as server:
        code = main(["--headless", "--json", "--config", str(config), "--base-url", server.base_url,
                     "--max-rounds", "3", "--save", str(tmp_path / "run.json"), "Write answer = 42."])
    assert code == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    finished: dict[str, Any] = events[-1]
    assert finished["type"] == "run_finished"
    return finished


def test_the_advised_line_is_accepted_and_the_old_advice_refused_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[swarm]\n{_advice()}\n", encoding="utf-8")
    assert load_config_file(config) == {"convergence_threshold": None}
    config.write_text("[swarm]\nconvergence_threshold = 1.01\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_config_file(config)
    assert str(refused.value).endswith('convergence_threshold must be between 0 and 1, or "off", got 1.01')


@pytest.mark.usefixtures("embedder")
def test_running_what_the_fidelity_list_advises_switches_the_convergence_stop_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWARM_TUI_SESSIONS_DIR", str(tmp_path))
    stopped = _run(tmp_path, "", capsys)
    assert stopped["reason"] == "converged" and stopped["rounds"] == 2  # the stop the list is about
    kept_on = _run(tmp_path, f"[swarm]\n{_advice()}\n", capsys)
    assert kept_on["reason"] == "max_rounds" and kept_on["rounds"] == 3
