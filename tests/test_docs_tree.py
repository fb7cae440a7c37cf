"""The README's and docs/architecture.md's trees name every package the code has (docs/architecture.md,
rule 10: the repository explains itself), so a new package cannot land without its line."""

from __future__ import annotations

import re

import pytest

from tests.support.paths import ROOT


def packages() -> list[str]:
    """Each package under core/ and tui/ as its tree line names it ('runtime/', 'cli/')."""
    found = []
    for top in ("core", "tui"):
        for init in sorted((ROOT / top).glob("*/__init__.py")):
            found.append(f"{init.parent.name}/")
    return found


def tree_block(text: str, heading: str) -> str:
    section = text[text.index(heading):]
    match = re.search(r"```\n(.*?)```", section, re.S)
    assert match, f"no tree under {heading}"
    return match.group(1)


@pytest.mark.parametrize(("path", "heading"), [("README.md", "## Architecture"), ("docs/architecture.md", "## Layout")])
def test_the_tree_names_every_package(path: str, heading: str) -> None:
    tree = tree_block((ROOT / path).read_text(encoding="utf-8"), heading)
    named = set(re.findall(r"^\s+([a-z_]+/)", tree, re.M))
    missing = [p for p in packages() if p not in named]
    assert not missing, f"{path} does not list {missing}"
    assert {"core/", "tui/", "tests/"} <= set(re.findall(r"^([a-z_]+/)", tree, re.M))
