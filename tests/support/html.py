"""Sessions for the HTML export's tests (tests/test_html_export.py, tests/browser): the shipped demo session
with a hostile reply in round 2, and the same session steered (a pinned edge, a cut edge, the actions)."""

from __future__ import annotations

import copy
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from core.sessions.model import Session
from core.sessions.store import load_session
from sessions import EXAMPLES_DIR

EXAMPLE = EXAMPLES_DIR / "example-code.json"
# Model text that would run, draw or fetch if it reached the page as markup.
HOSTILE = ('<script>window.__pwned = 1</script></svg></section></main>'
           '<img src="https://example.invalid/x.png" onerror="window.__pwned = 2"><svg onload="window.__pwned = 3">')


def _events() -> list[dict[str, Any]]:
    return copy.deepcopy(load_session(EXAMPLE).events)


def hostile_session() -> Session:
    """Round 2's first work reply, round 2's goal, the problem and the final answer all carry HOSTILE."""
    events = _events()
    for e in events:
        if e["type"] == "agent_finished" and e.get("round") == 2 and e.get("call") == "work":
            e["public"] = f"Here is my reply. {HOSTILE}\n```python\nprint('{HOSTILE}')\n```"
            break
    for e in events:
        if e["type"] == "manager_decided" and e.get("round") == 1 and not e.get("plan"):
            e["next_goal"] = f"goal {HOSTILE}"  # round 2's goal
        if e["type"] == "run_started":
            e["problem"] = f"{HOSTILE}\n{e['problem']}"
        if e["type"] == "run_finished":
            e["final_answer"] = HOSTILE
    return Session(events)


def steered_session() -> Session:
    """Round 2 as if the user had pinned Tester→Developer and cut Developer→Tester before it was routed."""
    events = _events()
    for e in events:
        if e["type"] == "topology_built" and e.get("round") == 2:
            routing = e["routing"]
            cut = next(x for x in routing["edges"] if (x["src"], x["dst"]) == ("Developer", "Tester"))
            routing["edges"].remove(cut)
            routing["removed"].append({**cut, "reason": "cut by user"})
            routing["edges"].append({"src": "Tester", "dst": "Developer", "score": 0.12, "kind": "pinned"})
            routing["removed"] = [r for r in routing["removed"] if (r["src"], r["dst"]) != ("Tester", "Developer")]
            ts = e["ts"] - 0.001
            break
    steered = [
        {"type": "user_steered", "ts": ts, "round": 2, "phase": "descriptors", "action": "pin",
         "target": "Tester→Developer", "payload": {}, "accepted": True, "reason": ""},
        {"type": "user_steered", "ts": ts, "round": 2, "phase": "descriptors", "action": "cut",
         "target": "Developer→Tester", "payload": {}, "accepted": True, "reason": ""},
    ]
    at = next(i for i, e in enumerate(events) if e["type"] == "topology_built" and e.get("round") == 2)
    return Session(events[:at] + steered + events[at:])


def write_session(session: Session, path: Path) -> Path:
    path.write_text(json.dumps(session.to_dict()), encoding="utf-8")
    return path


class Edges(HTMLParser):
    """Every drawn edge of a page, by the step whose section holds it: {step: {(src, dst, kind, score)}}, and
    the removed ones as {step: {(src, dst, reason)}}."""

    def __init__(self) -> None:
        super().__init__()
        self.step: int | None = None
        self.kept: dict[int, set[tuple[str, str, str, str]]] = {}
        self.removed: dict[int, set[tuple[str, str, str]]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section" and "data-step" in a:
            self.step = int(a["data-step"])
        classes = a.get("class", "").split()
        if tag == "g" and self.step is not None and "edge" in classes:
            self.kept.setdefault(self.step, set()).add((a["data-src"], a["data-dst"], a["data-kind"],
                                                        f"{float(a['data-score']):.2f}"))
        if tag == "g" and self.step is not None and "edge-removed" in classes:
            self.removed.setdefault(self.step, set()).add((a["data-src"], a["data-dst"], a["data-reason"]))


def drawn_edges(page: str) -> Edges:
    parser = Edges()
    parser.feed(page)
    return parser


LONG_REPLY = 200_000  # characters


def long_reply_session() -> Session:
    """The demo session with round 2's first work reply 200 KB long (over 2,000 lines)."""
    events = _events()
    lines = [f"line {i}: the agent keeps talking about the same suffix scan and its edge cases, again."
             for i in range(LONG_REPLY // 80)]
    for e in events:
        if e["type"] == "agent_finished" and e.get("round") == 2 and e.get("call") == "work":
            e["public"] = "\n".join(lines)[:LONG_REPLY]
            break
    return Session(events)
