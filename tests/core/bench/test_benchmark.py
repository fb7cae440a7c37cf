"""``swarm-tui bench`` end to end: the real CLI in-process, the real openai client against scripted
servers on 127.0.0.1, real MiniLM, the real sandbox and math-verify. The scripts answer with the
dataset's own solutions (or deliberately wrong ones), so scoring is checked both ways."""

from __future__ import annotations

import csv
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.bench.runner import CSV_FIELDS, SUMMARY_FIELDS, bench_method, session_name
from core.datasets.loader import load_dataset
from core.datasets.problems import DatasetError
from core.datasets.verdicts import humaneval_program, score_code
from core.demo.behaviour import ServerBehaviour
from core.demo.bench_script import benchmark_script
from core.demo.server import RequestInfo, ScriptedServer
from core.evaluation.extract import docstring_examples
from core.methods.baselines.method import solo_answer
from core.routing.dytopo import RoutingResult
from core.runtime import events as ev
from core.sessions.store import load_session
from tests.support.bench import HUMANEVAL, MATH, bench, dataset_problems, results, right_server  # noqa: F401  (fixture)
from tui.entry import main

ROW_COLUMNS = [
    "task_id",
    "strategy",
    "domain",
    "correct",
    "rounds",
    "prompt_tokens",
    "completion_tokens",
    "wall_s",
    "end_reason",
    "calls",
    "detail",
    "session",
    "repeat",
    "seed",
    "rejected",
    "cached_tokens",
    "cost_usd",
]


@pytest.fixture(scope="module")
def wrong_server() -> Iterator[ScriptedServer]:
    with ScriptedServer(benchmark_script(dataset_problems(), correct=False)) as server:
        yield server


def accuracy(out: Path) -> dict[str, float]:
    return {s["strategy"]: s["accuracy"] for s in results(out)["summary"]}


# --- end to end: scoring both ways -------------------------------------------------------------


@pytest.fixture(scope="module")
def humaneval_demo_run(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp("he-demo")
    code = bench(out, HUMANEVAL, "--demo", "--limit", "3", "--strategy", "dytopo,single", "--concurrency", "2")
    return out, code


def test_known_correct_humaneval_solutions_score_100_percent(humaneval_demo_run: tuple[Path, int]) -> None:
    out, code = humaneval_demo_run
    assert code == 0
    assert accuracy(out) == {"dytopo": 1.0, "single": 1.0}
    rows = results(out)["rows"]
    assert [(r["task_id"], r["strategy"]) for r in rows] == [
        (f"HumanEval/{i}", s) for s in ("dytopo", "single") for i in range(3)
    ]
    assert all(r["detail"].startswith("PASSED") for r in rows)
    # The swarm ended in round 2 once the visible tests passed; the solo agent answered in one round.
    assert {r["rounds"] for r in rows if r["strategy"] == "dytopo"} == {2}
    assert {r["rounds"] for r in rows if r["strategy"] == "single"} == {1}


def test_results_are_written_as_csv_and_json_with_the_expected_columns(humaneval_demo_run: tuple[Path, int]) -> None:
    out, _ = humaneval_demo_run
    assert CSV_FIELDS == ROW_COLUMNS
    with (out / "results.csv").open(encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == ROW_COLUMNS
        rows = list(reader)
    assert len(rows) == 6 and {r["correct"] for r in rows} == {"True"}
    assert all(int(r["prompt_tokens"]) > 0 and int(r["completion_tokens"]) > 0 for r in rows)
    with (out / "summary.csv").open(encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header = list(reader.fieldnames or [])
        # One column per figure: a name listed twice once wrote mean_calls twice into summary.csv.
        assert len(header) == len(set(header)), header
        assert header == SUMMARY_FIELDS
        assert {"accuracy", "mean_rounds", "mean_calls", "mean_prompt_tokens", "mean_wall_s"} <= set(header)
        assert [r["strategy"] for r in reader] == ["dytopo", "single"]
    data = results(out)
    assert {"dataset", "kind", "strategies", "model", "summary", "rows", "complete"} <= set(data)
    assert data["kind"] == "humaneval" and data["demo"] is True and data["complete"] is True
    assert all(set(ROW_COLUMNS) | {"answer", "metrics", "cost_unknown", "cost_local"} == set(r) for r in data["rows"])
    # Every finished pair was also appended to results.jsonl as it finished.
    logged = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(logged) == 6


def test_every_problem_and_strategy_saves_a_session(humaneval_demo_run: tuple[Path, int]) -> None:
    out, _ = humaneval_demo_run
    for row in results(out)["rows"]:
        session = load_session(out / row["session"])
        assert session.outcome is not None and session.completed_rounds == row["rounds"]
        started = session.replay_events()[0]
        assert isinstance(started, ev.RunStarted) and started.strategy == row["strategy"]
        assert row["session"].startswith(f"sessions/{row['strategy']}/")
    # Code execution ran during the swarm runs (visible tests only).
    dytopo = load_session(out / "sessions" / "dytopo" / f"{session_name('HumanEval/0')}.json")
    tests = [e for e in dytopo.replay_events() if isinstance(e, ev.TestRun)]
    assert tests and tests[-1].passed


def test_known_wrong_answers_score_0_percent(tmp_path: Path, wrong_server: ScriptedServer) -> None:
    he, ma = tmp_path / "he", tmp_path / "math"
    args = ("--limit", "3", "--strategy", "dytopo,single", "--max-rounds", "2", "--concurrency", "3")
    assert bench(he, HUMANEVAL, *args, server=wrong_server) == 0
    assert bench(ma, MATH, *args, server=wrong_server) == 0
    assert accuracy(he) == {"dytopo": 0.0, "single": 0.0}
    assert accuracy(ma) == {"dytopo": 0.0, "single": 0.0}
    assert all("WRONG_ANSWER" in r["detail"] for r in results(he)["rows"])
    assert all("not equivalent" in r["detail"] for r in results(ma)["rows"])


def test_known_correct_math_answers_score_100_percent(tmp_path: Path, right_server: ScriptedServer) -> None:  # noqa: F811
    code = bench(
        tmp_path, MATH, "--limit", "3", "--strategy", "dytopo,single", "--concurrency", "3", server=right_server
    )
    assert code == 0
    assert accuracy(tmp_path) == {"dytopo": 1.0, "single": 1.0}
    data = results(tmp_path)
    assert data["kind"] == "math" and {r["domain"] for r in data["rows"]} == {"math"}
    # Math runs use the math team.
    assert {r.role for r in right_server.requests} == {"Manager", "ProblemParser", "Solver", "Verifier", "Solo"}


# --- strategies --------------------------------------------------------------------------------


def test_single_makes_exactly_one_model_call_per_problem(tmp_path: Path, right_server: ScriptedServer) -> None:  # noqa: F811
    assert bench(tmp_path, HUMANEVAL, "--limit", "3", "--strategy", "single", server=right_server) == 0
    calls = right_server.requests
    assert len(calls) == 3
    assert {(r.role, r.call, r.round) for r in calls} == {("Solo", "single", 1)}
    assert accuracy(tmp_path) == {"single": 1.0}


def test_single_turn_ends_after_round_one_without_communication(tmp_path: Path, right_server: ScriptedServer) -> None:  # noqa: F811
    assert bench(tmp_path, HUMANEVAL, "--limit", "2", "--strategy", "single-turn", server=right_server) == 0
    rows = results(tmp_path)["rows"]
    assert [r["rounds"] for r in rows] == [1, 1]
    assert {r["end_reason"] for r in rows} == {"manager"}
    assert {r.call for r in right_server.requests} == {ev.CallKind.PLAN, ev.CallKind.WORK, ev.CallKind.MANAGER}
    assert accuracy(tmp_path) == {"single-turn": 1.0}


def _edge_counts(path: Path) -> dict[int, int]:
    events = load_session(path).replay_events()
    return {e.round: len(RoutingResult.from_dict(e.routing).edges) for e in events if isinstance(e, ev.TopologyBuilt)}


def test_random_strategy_matches_dytopos_edge_counts_round_by_round(
    tmp_path: Path, wrong_server: ScriptedServer
) -> None:
    # Wrong code keeps the visible tests failing, so the runs go on to max_rounds: several routed rounds.
    args = ("--limit", "2", "--strategy", "dytopo,random", "--max-rounds", "3", "--concurrency", "2")
    assert bench(tmp_path, HUMANEVAL, *args, server=wrong_server) == 0
    for name in (f"{session_name('HumanEval/0')}.json", f"{session_name('HumanEval/1')}.json"):
        dytopo = _edge_counts(tmp_path / "sessions" / "dytopo" / name)
        random = _edge_counts(tmp_path / "sessions" / "random" / name)
        assert sorted(dytopo) == [2, 3]
        assert random == dytopo
        assert sum(dytopo.values()) > 0
    # The hidden tests are for scoring only: no agent ever saw them.
    assert not any("def check(" in str(m.get("content")) for r in wrong_server.requests for m in r.messages)
    strategies = {
        load_session(p).replay_events()[0].strategy for p in (tmp_path / "sessions" / "random").glob("*.json")
    }
    assert strategies == {"random"}


def test_star_hub_is_the_domains_answer_role() -> None:
    assert bench_method("star", "code").graph.hub == "Developer"  # type: ignore[attr-defined]
    assert bench_method("star", "math").graph.hub == "Solver"  # type: ignore[attr-defined]
    assert bench_method("single-turn", "code").name == "single-turn"


# --- resume and interruption -------------------------------------------------------------------


def test_resume_skips_finished_pairs(tmp_path: Path, right_server: ScriptedServer) -> None:  # noqa: F811
    assert bench(tmp_path, HUMANEVAL, "--limit", "2", "--strategy", "single", server=right_server) == 0
    with (tmp_path / "results.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"task_id": "HumanEval/2", "strat')  # a row cut off by a kill
    # Without --resume an earlier run's folder is not overwritten.
    assert bench(tmp_path, HUMANEVAL, "--limit", "3", "--strategy", "single", server=right_server) == 2
    assert right_server.requests == []

    assert bench(tmp_path, HUMANEVAL, "--limit", "3", "--strategy", "single", "--resume", server=right_server) == 0
    problems = load_dataset(HUMANEVAL).problems
    assert len(right_server.requests) == 1
    asked = right_server.requests[0].messages[-1]["content"]
    assert problems[2].task in asked and problems[0].task not in asked and problems[1].task not in asked
    rows = results(tmp_path)["rows"]
    assert [r["task_id"] for r in rows] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]


def test_ctrl_c_stops_cleanly_and_keeps_finished_rows(tmp_path: Path) -> None:
    problems = dataset_problems()
    answer = benchmark_script(problems)
    seen: list[int] = []

    def interrupting(info: RequestInfo) -> str:
        seen.append(1)
        if len(seen) == 2:
            os.kill(os.getpid(), signal.SIGINT)  # the user presses Ctrl-C during the second problem
        return answer(info)

    with ScriptedServer(interrupting, ServerBehaviour(latency=0.2)) as server:
        code = bench(tmp_path, HUMANEVAL, "--limit", "4", "--strategy", "single", server=server)
        assert code == 130
        kept = results(tmp_path)["rows"]
        assert 1 <= len(kept) < 4 and kept[0]["task_id"] == "HumanEval/0"
        assert results(tmp_path)["complete"] is False
        assert bench(tmp_path, HUMANEVAL, "--limit", "4", "--strategy", "single", "--resume", server=server) == 0
        assert len(server.requests) == 4 - len(kept)
    assert len(results(tmp_path)["rows"]) == 4


# --- datasets and errors -----------------------------------------------------------------------


def test_datasets_are_detected_by_their_fields() -> None:
    he = load_dataset(HUMANEVAL)
    ma = load_dataset(MATH)
    assert (he.kind, len(he.problems), he.problems[0].domain) == ("humaneval", 164, "code")
    assert (ma.kind, len(ma.problems), ma.problems[0].domain) == ("math", 500, "math")
    # The visible task keeps the stub verbatim; the hidden tests are not in it.
    first = he.problems[0]
    assert first.prompt.rstrip() in first.task and "def check" not in first.task
    # ...and its docstring examples, the visible tests code execution runs, survive the wrapping.
    assert all(docstring_examples(p.task) == docstring_examples(p.prompt) for p in he.problems)
    assert docstring_examples(first.task)
    assert ma.problems[0].reference == "\\left( 3, \\frac{\\pi}{2} \\right)"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"question": "2+2?", "label": 4}\n', "unknown dataset format"),
        ("not json at all\n", "not a JSON line"),
        ("", "empty"),
        (
            '{"problem": "1+1", "answer": "2"}\n{"task_id": "a", "prompt": "p", "test": "t", "entry_point": "f"}\n',
            "a humaneval record in a math dataset",
        ),
        ('{"problem": "1+1", "answer": ""}\n', "'answer' must be non-empty"),
    ],
)
def test_a_bad_dataset_is_one_clear_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, fragment: str
) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError, match=fragment):
        load_dataset(path)
    assert main(["bench", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and fragment in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--strategy", "dytopo,bogus"], "unknown strategy bogus"),
        (["--offset", "999"], "past the end"),
        (["--domain", "math"], "does not fit a HumanEval dataset"),
        (["--limit", "0"], "--limit"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    try:
        code = main(["bench", str(HUMANEVAL), "--out", str(tmp_path), *args])
    except SystemExit as exc:  # argparse's own errors exit from parse_args
        code = int(exc.code or 0)
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and fragment in err


def test_unreachable_endpoint_is_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = bench(tmp_path, HUMANEVAL, "--limit", "1", "--strategy", "single", "--base-url", "http://127.0.0.1:9/v1")
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot reach the model endpoint at http://127.0.0.1:9/v1" in err[0]


# --- scoring details ---------------------------------------------------------------------------


async def test_a_body_only_completion_is_scored_like_humaneval() -> None:
    problem = load_dataset(HUMANEVAL).problems[2]  # truncate_number
    body = problem.canonical_solution.strip()  # fenced blocks lose their indentation
    assert (await score_code(problem, f"```python\n{body}\n```")).correct
    assert not (await score_code(problem, "```python\nreturn 0.0\n```")).correct
    full = humaneval_program(problem, "def truncate_number(number: float) -> float:\n    return number % 1.0\n")
    assert full.startswith(problem.prompt) and full.rstrip().endswith("return number % 1.0")
    assert not (await score_code(problem, "I could not solve it.")).correct


def test_the_solo_math_answer_is_read_from_json_or_text() -> None:
    problem = load_dataset(MATH).problems[0]
    assert solo_answer(problem.domain, '{"reasoning": "r", "answer": "\\\\frac{1}{2}"}') == "\\frac{1}{2}"
    assert solo_answer(problem.domain, "so the answer is $\\boxed{7}$") == "7"


def test_compare_opens_every_method_run_of_one_benchmark_problem(humaneval_demo_run: tuple[Path, int]) -> None:
    """swarm-tui compare --bench DIR TASK_ID: each method's session of that problem, with the bench's verdict."""
    from core.bench.compare_runs import bench_runs
    from core.sessions.model import SessionFormatError

    out, code = humaneval_demo_run
    assert code == 0
    rows = {r["strategy"]: r for r in results(out)["rows"] if r["repeat"] == 0}
    task_id = next(iter(results(out)["rows"]))["task_id"]
    runs = bench_runs(out, task_id)
    assert [run.label for run in runs] == ["dytopo", "single"]
    for run in runs:
        assert run.session.problem.strip() and run.path.is_file()
        expected = next(r for r in results(out)["rows"] if r["task_id"] == task_id and r["strategy"] == run.label)
        assert run.row.verdict.lower().startswith("passed" if expected["correct"] else "failed")
        assert run.row.calls == expected["calls"]
    assert rows  # the benchmark recorded rows to compare against
    with pytest.raises(SessionFormatError, match="no run of problem"):
        bench_runs(out, "HumanEval/no-such-task")
