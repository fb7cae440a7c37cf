"""Reading the graph pane's drawn text back into edges."""

from __future__ import annotations

import re

EDGE_RE = re.compile(r"^\s*(?:\+ +)?(\S+) ─(\d\.\d\d)─▶ (\S+)")  # "+ ": added (in a preview)


def drawn_edges(text: str) -> set[tuple[str, str, str]]:
    found = set()
    for line in text.splitlines():
        for chunk in re.split(r"\s{3,}", line):  # edge lines may flow into columns
            m = EDGE_RE.match(chunk)
            if m:
                found.add((m[1], m[3], m[2]))
    return found
