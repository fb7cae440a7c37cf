"""The datasets shipped inside the package, by name: ``swarm-tui bench humaneval`` works from any folder.

Their sources and MIT licence notices are in core/datasets/data/LICENSES.md (and the README).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.datasets.formats import FORMATS
from core.datasets.problems import DatasetError

DATA = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Shipped:
    name: str
    file: str
    format: str
    rows: int
    source: str
    licence: str = "MIT"

    @property
    def path(self) -> Path:
        return DATA / self.file


SHIPPED: tuple[Shipped, ...] = (
    Shipped("humaneval", "humaneval.jsonl", "humaneval", 164, "OpenAI HumanEval (github openai/human-eval)"),
    Shipped("math500", "math500.jsonl", "math", 500,
            "MATH-500: Lightman et al.'s subset of MATH (Hendrycks et al.)"),
)


def resolve(name_or_path: str | Path) -> Path:
    """A shipped dataset's file for its name, else the path as given (a local file)."""
    text = str(name_or_path)
    for shipped in SHIPPED:
        if text.lower() == shipped.name:
            if not shipped.path.is_file():
                raise DatasetError(f"the shipped dataset {shipped.name} is missing from {DATA}: reinstall swarm-tui")
            return shipped.path
    return Path(name_or_path)


def listing() -> str:
    """What ``swarm-tui bench --list`` prints: the shipped datasets, then the formats a file may have."""
    lines = ["Shipped datasets (swarm-tui bench NAME):"]
    for s in SHIPPED:
        lines.append(f"  {s.name:<10} {s.rows:>4} problems  format {s.format:<10} {s.licence}  {s.source}")
    lines.append("")
    lines.append("Formats of a local JSONL file (swarm-tui bench FILE, detected by fields or --format NAME):")
    for f in FORMATS:
        lines.append(f"  {f.name:<10} {f.domain:<8} fields {', '.join(f.fields):<40} {f.source}")
    return "\n".join(lines)
