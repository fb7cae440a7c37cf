"""Repeats, seeds, -o options, self-consistency and the report: the real CLI in-process against the
scripted server on 127.0.0.1 (real openai client, real sandbox), and report files a user opens."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from core.bench.report import write_report
from tests.support.bench import HUMANEVAL, bench, results, right_server  # noqa: F401  (fixture)


def test_repeats_run_every_pair_r_times_with_distinct_seeds_sent_to_the_server(
    tmp_path: Path, right_server  # noqa: F811
) -> None:
    assert bench(tmp_path, HUMANEVAL, "--limit", "2", "--strategy", "single", "--repeats", "2", "--seed", "5",
                 server=right_server) == 0
    rows = results(tmp_path)["rows"]
    assert sorted((r["task_id"], r["repeat"]) for r in rows) == [
        ("HumanEval/0", 0), ("HumanEval/0", 1), ("HumanEval/1", 0), ("HumanEval/1", 1)
    ]
    seeds = {r["repeat"]: r["seed"] for r in rows}
    assert seeds[0] != seeds[1]
    assert sorted(req.body.get("seed") for req in right_server.requests) == sorted(r["seed"] for r in rows)


def test_resume_with_more_repeats_runs_only_the_new_repeats(tmp_path: Path, right_server) -> None:  # noqa: F811
    assert bench(tmp_path, HUMANEVAL, "--limit", "2", "--strategy", "single", server=right_server) == 0
    assert bench(tmp_path, HUMANEVAL, "--limit", "2", "--strategy", "single", "--repeats", "2", "--resume",
                 server=right_server) == 0
    assert len(right_server.requests) == 2  # repeat 1 of both problems; repeat 0 kept
    assert sorted(r["repeat"] for r in results(tmp_path)["rows"]) == [0, 0, 1, 1]


def test_self_consistency_samples_k_answers_and_options_are_recorded(tmp_path: Path, right_server) -> None:  # noqa: F811
    assert bench(tmp_path, HUMANEVAL, "--limit", "1", "--strategy", "single", "-o", "single.samples=3",
                 server=right_server) == 0
    data = results(tmp_path)
    assert data["rows"][0]["calls"] == 3 and data["rows"][0]["correct"] is True
    assert data["method_options"]["single"] == {"samples": 3}
    assert "samples=3" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_an_option_no_chosen_method_has_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    assert bench(tmp_path, HUMANEVAL, "--demo", "--strategy", "single", "-o", "alpha=0.5") == 2
    err = capsys.readouterr().err
    assert "alpha" in err and len(err.strip().splitlines()) == 1


def _folder(path: Path, model: str, accuracy: dict[str, float]) -> Path:
    path.mkdir()
    lines = []
    for strategy, acc in accuracy.items():
        for i in range(20):
            lines.append(json.dumps({
                "task_id": f"P{i}", "strategy": strategy, "domain": "math", "correct": i < acc * 20, "rounds": 1,
                "prompt_tokens": 100 * (1 + len(strategy)), "completion_tokens": 50, "wall_s": 0.1,
                "end_reason": "x", "calls": 1,
            }))
    (path / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (path / "results.json").write_text(json.dumps({"model": model, "strategies": list(accuracy)}), encoding="utf-8")
    return path


def test_report_writes_markdown_json_png_and_svg(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "a", "m1", {"dytopo": 0.7, "single": 0.5})
    written = write_report([folder])
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert "95%" in md
    assert "| dytopo | 14/20 | 70.0% | [48.1%, 85.5%] (Wilson)" in md  # Wilson 14/20
    assert "| single | 10/20 | 50.0% | [29.9%, 70.1%] (Wilson)" in md
    assert "| single | dytopo | 20 | 0 | 4 | 0.125 | -20.0 pts" in md  # exact McNemar 0 vs 4: p = 2/16
    pngs = [p for p in written if p.suffix == ".png"]
    svgs = [p for p in written if p.suffix == ".svg"]
    assert len(pngs) == 3 and len(svgs) == 3
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for svg in svgs:
        assert ET.parse(svg).getroot().tag.endswith("svg")
    data = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert [m["strategy"] for m in data["methods"]] == ["dytopo", "single"]


def test_several_folders_merge_with_a_model_column(tmp_path: Path) -> None:
    first = _folder(tmp_path / "a", "m1", {"dytopo": 0.7})
    _folder(tmp_path / "b", "m2", {"dytopo": 0.4})
    write_report([first, tmp_path / "b"], plots=False)
    md = (first / "report.md").read_text(encoding="utf-8")
    assert "| model | method |" in md
    assert "| m1 | dytopo | 14/20 |" in md and "| m2 | dytopo | 8/20 |" in md


def test_several_base_urls_share_the_calls(tmp_path: Path, capsys) -> None:
    from core.datasets.loader import load_dataset
    from core.demo.behaviour import ServerBehaviour
    from core.demo.bench_script import benchmark_script
    from core.demo.server import ScriptedServer
    from tui.entry import main

    script = benchmark_script(load_dataset(HUMANEVAL).problems)
    with (
        ScriptedServer(script, ServerBehaviour(latency=0.05)) as first,
        ScriptedServer(script, ServerBehaviour(latency=0.05)) as second,
    ):
        code = main(["bench", str(HUMANEVAL), "--out", str(tmp_path), "--limit", "4", "--strategy", "single",
                     "--concurrency", "4", "--base-url", first.base_url, "--base-url", second.base_url])
        assert code == 0
        chats = [len([r for r in s.requests if r.messages]) for s in (first, second)]
        urls = [first.base_url, second.base_url]
    assert sum(chats) == 4 and min(chats) >= 1  # both endpoints served calls
    assert results(tmp_path)["base_urls"] == urls
    assert "calls per endpoint" in capsys.readouterr().err


def test_a_bad_second_base_url_is_one_line(tmp_path: Path, right_server, capsys) -> None:  # noqa: F811
    code = main_bench(tmp_path, right_server.base_url, "ftp://nowhere")
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ftp" in err[0]


def main_bench(out: Path, *urls: str) -> int:
    from tui.entry import main

    argv = ["bench", str(HUMANEVAL), "--out", str(out), "--limit", "1", "--strategy", "single"]
    for url in urls:
        argv += ["--base-url", url]
    return main(argv)


def test_progress_shows_each_methods_count_and_the_sweeps_eta() -> None:
    import io

    from core.bench.runner import Row
    from tui.cli.bench import Progress

    out = io.StringIO()
    progress = Progress(out, {"dytopo": 2, "single": 2}, concurrency=2)
    progress(Row("P0", "dytopo", "code", True, 2, 10, 10, 4.0, "x"), 1, 4)
    assert "dytopo 1/2" in out.getvalue() and "ETA 6s" in out.getvalue()  # (1 + 2) runs x 4 s / 2
    progress(Row("P0", "single", "code", True, 1, 10, 10, 2.0, "x"), 2, 4)
    assert out.getvalue().splitlines()[-1].endswith("single 1/2 ETA 3s")  # (1 x 4 + 1 x 2) / 2


def test_the_report_redacts_the_endpoint_and_shows_the_dataset_relative_to_the_bench_folder(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    folder = _folder(tmp_path / "runs" / "a", "m1", {"dytopo": 0.7, "single": 0.5})
    meta = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    meta.update(base_url="https://user:s3cret@gateway.example/v1?api-key=KEY123",
                dataset=str(tmp_path / "data" / "mine.jsonl"))
    (folder / "results.json").write_text(json.dumps(meta), encoding="utf-8")
    write_report([folder])
    for name in ("report.md", "report.html", "report.json"):
        text = (folder / name).read_text(encoding="utf-8")
        assert "s3cret" not in text and "KEY123" not in text and "gateway.example" in text, name
        assert "../../data/mine.jsonl" in text and str(tmp_path / "data") not in text, name
