"""What the browser tests share: a page that records what it asked the network for and what went wrong."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SIZES = ((1280, 800), (390, 844))  # the pages are photographed at a desktop's and a phone's size


@dataclass
class Watched:
    page: Any
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # console errors (a CSP violation is one) and page errors
    dialogs: list[str] = field(default_factory=list)


def open_page(browser: Any, url: str, *, width: int = 1280, height: int = 800, scripts: bool = True,
              init_script: str = "") -> Watched:
    context = browser.new_context(viewport={"width": width, "height": height}, java_script_enabled=scripts)
    page = context.new_page()
    watched = Watched(page)
    page.on("request", lambda r: watched.requests.append(r.url))
    page.on("console", lambda m: watched.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: watched.errors.append(str(e)))

    def dialog(d: Any) -> None:
        watched.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    if init_script:
        page.add_init_script(init_script)
    page.goto(url)
    return watched


def photograph(browser: Any, url: str, shots: Path, name: str, *, keys: tuple[str, ...] = ()) -> list[int]:
    """Screenshots of the whole page at both sizes; the page's scroll width at each (what would overflow)."""
    widths = []
    for width, height in SIZES:
        watched = open_page(browser, url, width=width, height=height)
        for key in keys:
            watched.page.keyboard.press(key)
        watched.page.screenshot(path=str(shots / f"{name}-{width}x{height}.png"), full_page=True)
        widths.append(watched.page.evaluate("() => document.documentElement.scrollWidth"))
        watched.page.context.close()
    return widths
