"""The browser tier: Debian's chromium driven by Playwright for Python, launched from its system path
(``executable_path``): Playwright never downloads a browser here. Skipped, with the reason, where no chromium is
installed (the README's install command adds it where apt is available).

Every page is also photographed at 1280x800 and 390x844 into SWARM_TUI_SCREENSHOTS (a temporary folder when
unset), for a person to look at."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        pytest.skip("no chromium on this machine (apt-get install chromium): the browser tier needs it")
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as p:
        # --no-sandbox: CI runs as root, where Chromium's own sandbox refuses to start.
        launched = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("SWARM_TUI_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder
