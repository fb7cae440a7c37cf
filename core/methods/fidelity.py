"""Where each method departs from its paper: one list, with the reason and what restores the paper.

Each method keeps its own notes in its package (``fidelity.py``, handed to MethodInfo.fidelity; a plugin
does the same); this module holds the ones every method shares and collects the whole list.

``swarm-tui strategies --fidelity`` prints it and docs/fidelity.md shows the same; a
test checks that every option named here exists and changes what the method does. Defaults follow the
papers; an economy or a reading the paper leaves open is listed here, never hidden in a docstring.

``restore`` is what a user sets to get the paper's behaviour: ``-o KEY=VALUE`` for a method option
(``option`` names it), a config-file setting, or a command. Empty when nothing can (a plain reading of
an ambiguous passage, or something the app cannot do on a user's machine).
"""

from __future__ import annotations

from core.methods.catalogue import load_all, method_names, own_method_names
from core.methods.registry import Deviation, registered

# The departures every method shares; each method's own are in its package (MethodInfo.fidelity).
SHARED: tuple[Deviation, ...] = (
    Deviation(
        "all",
        "Calls are capped by the token limits of the settings (descriptor_call, work_call, manager_call).",
        "Bounded runs on small local models; the reference's limits are the defaults (256 / 4096 / 2000).",
    ),
)


def deviations(method: str | None = None, *, own_only: bool = False) -> list[Deviation]:
    """The list (every method's own notes, MethodInfo.fidelity, in the order ``swarm-tui strategies`` lists the
    methods, then the shared ones), or the entries of one method (its own and those for every method).
    ``own_only``: the app's own methods only, not installed plugins' (what docs/fidelity.md shows)."""
    load_all()
    collected: list[Deviation] = []
    infos = registered()
    for name in own_method_names() if own_only else method_names():
        info = infos.get(name)
        collected.extend(d for d in (info.fidelity if info else ()) if d not in collected)
    collected.extend(SHARED)
    if method is None:
        return collected
    return [d for d in collected if d.method in (method, "all")]


def fidelity_text() -> str:
    """The list as ``swarm-tui strategies --fidelity`` prints it."""
    lines: list[str] = []
    current = ""
    for d in deviations():
        if d.method != current:
            current = d.method
            lines.append(f"{'' if not lines else chr(10)}{current}")
        mark = "paper by default" if d.default_is_paper else "differs from the paper"
        lines.append(f"  - [{mark}] {d.what}")
        lines.append(f"      why: {d.why}")
        if d.restore:
            lines.append(f"      to restore: {d.restore}")
    return "\n".join(lines)


def fidelity_markdown() -> str:
    """The list as docs/fidelity.md shows it (a test keeps the two the same)."""
    rows = ["| method | what the app does | why | to restore the paper |", "|---|---|---|---|"]
    for d in deviations(own_only=True):
        what = d.what + (" *(the paper's default)*" if d.default_is_paper else "")
        cells = (d.method, what, d.why, f"`{d.restore}`" if d.restore else "—")
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)
