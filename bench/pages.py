"""Benchmark: how tall the exported pages are, and screenshots of each, in Debian's chromium.

Builds every page a user shares: each method's demo session, the shipped example with one 200 KB reply, a
comparison (the test fixture) and a bench report (two HumanEval problems, two methods, on the demo server);
opens each at 1280x800 and 390x844 and prints the page's height in CSS pixels. Screenshots of the whole page
go to --shots (a temporary folder when not given). ``--baseline REV`` measures that revision too (in a
temporary git worktree), with the same session files.

Run: .venv/bin/python bench/pages.py [--baseline REV] [--shots DIR]
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if "--child" not in sys.argv:  # a child imports the revision on its PYTHONPATH, not this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(1, str(Path(__file__).resolve().parent))

METHODS = ("dytopo", "topodim", "dmoa", "topoweaver", "chain", "single")
SIZES = ((1280, 800), (390, 844))
LONG = 200_000  # characters of the long reply


def _long_reply() -> str:
    lines = [f"line {i}: the agent keeps talking about the same suffix scan and its edge cases, again." for i in
             range(LONG // 80)]
    return "\n".join(lines)[:LONG]


def make_sessions(folder: Path) -> None:
    """The session files every revision exports: built once, by this checkout."""
    from sessions import EXAMPLES_DIR
    from tui.entry import main

    for method in METHODS:
        assert main(["--demo", "--headless", "--strategy", method, "--save", str(folder / f"{method}.json")]) == 0
    data = json.loads((EXAMPLES_DIR / "example-code.json").read_text(encoding="utf-8"))
    events = copy.deepcopy(data["events"])
    for e in events:
        if e["type"] == "agent_finished" and e.get("round") == 2 and e.get("call") == "work":
            e["public"] = _long_reply()
            break
    data["events"] = events
    (folder / "long-reply.json").write_text(json.dumps(data), encoding="utf-8")
    fixture = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "compare"
    shutil.copytree(fixture, folder / "compare")
    dataset = Path(__file__).resolve().parent.parent / "core" / "datasets"
    humaneval = next(dataset.rglob("humaneval.jsonl"), None) or next(Path("/work/shared/datasets").rglob(
        "humaneval*.jsonl"))
    with ThreadPoolExecutor(1) as pool:  # the bench runs an asyncio loop of its own
        code = pool.submit(main, ["bench", str(humaneval), "--out", str(folder / "bench"), "--demo", "--limit", "2",
                                  "--strategy", "single,chain"]).result()
    assert code == 0


def export_pages(sessions: Path, out: Path) -> list[Path]:
    """Every page, written by the checkout on the path."""
    from core.bench.report import write_report
    from tui.entry import main

    out.mkdir(parents=True, exist_ok=True)
    pages = []
    for source in sorted(sessions.glob("*.json")):
        page = out / f"{source.stem}.html"
        assert main(["export", str(source), "--format", "html", "-o", str(page)]) == 0
        pages.append(page)
    compare = out / "compare"
    shutil.copytree(sessions / "compare", compare, dirs_exist_ok=True)
    page = out / "compare.html"
    assert main(["export", str(compare / "demo-math.compare.json"), "--format", "html", "-o", str(page)]) == 0
    pages.append(page)
    bench = out / "bench"
    shutil.copytree(sessions / "bench", bench, dirs_exist_ok=True)
    write_report([bench])
    pages.append(bench / "report.html")
    return pages


def measure(pages: list[Path], shots: Path, tag: str) -> dict[str, list[int]]:
    """{page: [height at each size]}; screenshots as TAG-PAGE-WxH.png."""
    from playwright.sync_api import sync_playwright

    heights: dict[str, list[int]] = {}
    views = [(f.stem if f.stem != "report" else "bench-report", f, "", True) for f in pages]
    long_reply = next(f for f in pages if f.stem == "long-reply")  # the reply is in round 2
    views += [("long #step-2", long_reply, "#step-2", True), ("long, no js", long_reply, "", False)]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or "chromium", args=["--no-sandbox"])
        for name, page_file, fragment, scripts in views:
            for width, height in SIZES:
                context = browser.new_context(viewport={"width": width, "height": height},
                                              java_script_enabled=scripts)
                page = context.new_page()
                page.goto(page_file.as_uri() + fragment)
                page.wait_for_timeout(100)
                tall = page.evaluate("() => document.documentElement.scrollHeight")
                heights.setdefault(name, []).append(tall)
                if tall < 30_000:  # a taller screenshot comes out blank
                    file = f"{tag}-{name.replace(' ', '').replace('#', '').replace(',', '-')}-{width}x{height}.png"
                    page.screenshot(path=str(shots / file), full_page=True)
                context.close()
        browser.close()
    return heights


def child(sessions: Path, shots: Path, tag: str) -> None:
    with tempfile.TemporaryDirectory(prefix="swarm-pages-") as tmp:
        print(json.dumps(measure(export_pages(sessions, Path(tmp)), shots, tag)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="also measure this git revision")
    parser.add_argument("--shots", type=Path, help="folder for the screenshots")
    parser.add_argument("--child", nargs=3, metavar=("SESSIONS", "SHOTS", "TAG"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(Path(args.child[0]), Path(args.child[1]), args.child[2])
        return 0
    shots = args.shots or Path(tempfile.mkdtemp(prefix="swarm-shots-"))
    shots.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="swarm-sessions-") as tmp:
        sessions = Path(tmp)
        make_sessions(sessions)
        before: dict[str, Any] = {}
        if args.baseline:
            from baseline import measure_at

            before = measure_at(args.baseline, Path(__file__).resolve(), [str(sessions), str(shots), "before"])
        with tempfile.TemporaryDirectory(prefix="swarm-pages-") as out:
            now = measure(export_pages(sessions, Path(out)), shots, "now")
    print(f"page height in CSS px (screenshots: {shots})")
    print(f"{'page':<14}" + "".join(f"{f'{w}x{h}':>22}" for w, h in SIZES))
    for name, heights in now.items():
        cells = [f"{before[name][i]:,} → {h:,}" if name in before else f"{h:,}" for i, h in enumerate(heights)]
        print(f"{name:<14}" + "".join(f"{c:>22}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
