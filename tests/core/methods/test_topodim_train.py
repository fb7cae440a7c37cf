"""Training TopoDIM's generator through the real runtime: scripted server over HTTP, real MiniLM, the
benchmark's scoring, checkpoints and resume (``swarm-tui train topodim``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from core.compose.plan import BackendChoice
from core.compose.runner import open_backend
from core.compose.train_topodim import TopoDIMTrainer, TrainError, TrainPlan, distill
from core.datasets.loader import load_dataset
from core.demo.bench_script import benchmark_script
from core.demo.server import ScriptedServer
from core.methods.topodim.policy import load_checkpoint
from core.runtime import events as ev
from core.runtime.config import Settings
from tui.cli.train_topodim import main

pytestmark = pytest.mark.usefixtures("embedder")

PROBLEMS = [
    {
        "task_id": "Tiny/0",
        "prompt": 'def add(a: int, b: int) -> int:\n    """Add two numbers.\n    >>> add(1, 2)\n    3\n    """\n',
        "canonical_solution": "    return a + b\n",
        "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n",
        "entry_point": "add",
    },
    {
        "task_id": "Tiny/1",
        "prompt": 'def double(x: int) -> int:\n    """Twice x.\n    >>> double(4)\n    8\n    """\n',
        "canonical_solution": "    return 2 * x\n",
        "test": "def check(candidate):\n    assert candidate(0) == 0\n    assert candidate(5) == 10\n",
        "entry_point": "double",
    },
]


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in PROBLEMS) + "\n", encoding="utf-8")
    return path


async def _train(dataset: Path, weights: Path, embedder: Any, *, correct: bool = True, **plan: Any) -> Any:
    problems = load_dataset(dataset).problems
    settings = Settings(max_retries=0)
    with ScriptedServer(benchmark_script(problems, correct=correct)) as server:
        backend = await open_backend(settings, BackendChoice(server=server))
        try:
            trainer = TopoDIMTrainer(TrainPlan(dataset=str(dataset), samples=1, **plan), settings, backend, embedder,
                                     weights)
            reports = await trainer.run(problems[:1])
        finally:
            await backend.close()
    return trainer, reports


async def test_a_rewarded_run_makes_its_graph_more_likely(dataset: Path, tmp_path: Path, embedder: Any) -> None:
    trainer, reports = await _train(dataset, tmp_path / "p.pt", embedder)
    (report,) = reports
    assert report.task_rewards == [1.0]  # the team's final code passed the hidden tests
    assert report.rewards[0] == pytest.approx(0.8 * 1.0 + 0.2 * report.diversity[0])  # eq. 11, λ = 0.8
    with torch.no_grad():
        after = float(trainer.policy.log_prob_and_entropy(report.samples[0])[0])
    assert after > report.log_probs_before[0]  # R - b > 0 (b starts at 0): the graph gained probability
    assert report.temperature == 0.5  # a one-step plan ends the annealing at once
    assert trainer.baseline == pytest.approx(0.1 * report.rewards[0])


async def test_a_wrong_answer_earns_no_task_reward(dataset: Path, tmp_path: Path, embedder: Any) -> None:
    _, reports = await _train(dataset, tmp_path / "p.pt", embedder, correct=False)
    assert reports[0].task_rewards == [0.0]
    assert reports[0].rewards[0] == pytest.approx(0.2 * reports[0].diversity[0])


def test_the_cli_trains_checkpoints_and_resumes(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                ) -> None:
    weights = tmp_path / "w" / "policy.pt"
    args = [str(dataset), "--demo", "--limit", "1", "--samples", "1", "--weights", str(weights)]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "step 1/1 Tiny/0" in err and "DEMO" in err
    data = load_checkpoint(weights)
    assert data["step"] == 1 and data["plan"]["samples"] == 1 and "optimizer" in data
    assert main(args) == 2  # weights exist: say so, do not overwrite
    assert "--resume" in capsys.readouterr().err
    assert main([*args, "--resume"]) == 0
    assert "nothing left to train" in capsys.readouterr().err
    assert main([*args, "--resume", "--epochs", "2"]) == 0  # more epochs continue the same training
    assert load_checkpoint(weights)["step"] == 2
    assert main([*args, "--resume", "--alpha", "0.5"]) == 1  # other settings: resume refuses
    assert "alpha" in capsys.readouterr().err
    assert main([*args, "--restart"]) == 0 and load_checkpoint(weights)["step"] == 1


def test_the_cli_rejects_bad_input_with_one_line(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                 ) -> None:
    weights = str(tmp_path / "p.pt")
    assert main([str(tmp_path / "missing.jsonl"), "--demo", "--weights", weights]) == 2
    assert main([str(dataset), "--demo", "--weights", weights, "--edge-types", "telepathy"]) == 2
    assert main([str(dataset), "--demo", "--weights", weights, "--resume"]) == 2
    assert main([str(dataset), "--demo", "--weights", weights, "--offset", "5"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(lines) == 4 and all(line.startswith("swarm-tui train topodim: error:") for line in lines)


async def test_resume_refuses_a_file_that_is_not_a_checkpoint(dataset: Path, tmp_path: Path, embedder: Any) -> None:
    bad = tmp_path / "p.pt"
    bad.write_bytes(b"garbage")
    with pytest.raises(TrainError, match="cannot resume"):
        TopoDIMTrainer(TrainPlan(dataset=str(dataset)), Settings(), None, embedder, bad, resume=True)  # type: ignore[arg-type]


async def test_distillation_then_a_decentralised_run(dataset: Path, tmp_path: Path, embedder: Any) -> None:
    from core.methods.topodim.events import TopoDIMGraph
    from tests.support.engine import of
    from tests.support.topodim import run_topodim

    weights = tmp_path / "p.pt"
    await _train(dataset, weights, embedder)
    report = await distill(weights, load_dataset(dataset).problems, embedder, steps=120)
    assert report.queries == 2 and report.kl_end < report.kl_start / 5
    data = load_checkpoint(weights)
    assert "local_state" in data and data["step"] == 1 and data["distilled"]["queries"] == 2
    _, events, _ = await run_topodim(embedder, options={"generator": "decentralized", "weights": str(weights)})
    graph = of(events, TopoDIMGraph)[0]
    assert graph.generator == "decentralized" and "distilled on 2 queries" in graph.weights


async def test_decentralized_without_local_policies_says_so(tmp_path: Path, embedder: Any) -> None:
    from core.methods.topodim.events import TopoDIMGraph
    from core.methods.topodim.policy import TopoDIMPolicy, save_checkpoint
    from tests.support.engine import of
    from tests.support.topodim import run_topodim

    weights = tmp_path / "p.pt"
    save_checkpoint(weights, TopoDIMPolicy(seed=1), step=4)
    _, events, _ = await run_topodim(embedder, options={"generator": "decentralized", "weights": str(weights)})
    assert any("no distilled local policies" in n.message for n in of(events, ev.Notice))
    assert of(events, TopoDIMGraph)[0].generator == "policy"


def test_the_cli_distils_after_training(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    weights = tmp_path / "p.pt"
    assert main([str(dataset), "--weights", str(weights), "--distill"]) == 2  # nothing trained yet
    assert "nothing to distil" in capsys.readouterr().err
    assert main([str(dataset), "--demo", "--limit", "1", "--samples", "1", "--weights", str(weights)]) == 0
    assert main([str(dataset), "--weights", str(weights), "--distill", "--distill-steps", "50"]) == 0
    assert "distilled: eq. 13 KL per query" in capsys.readouterr().out
    assert load_checkpoint(weights)["distilled"]["steps"] == 50
