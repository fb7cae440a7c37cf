"""``swarm-tui serve --demo`` in Chromium: the agent panes reach the page, and a spectator's step key is
refused in one line. The served terminal draws on a canvas, so the page's text is read where it arrives: the
bytes its websocket hands to the terminal (recorded by a script the test adds to the page)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import SIZES, open_page
from tests.support.serve import hostile_folder, serving
from tui.spectate import REFUSAL

pytestmark = pytest.mark.browser
RECORD = """(() => { window.__screen = ''; const decode = new TextDecoder(); const Native = window.WebSocket;
  window.WebSocket = function (url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    ws.addEventListener('message', e => {
      if (typeof e.data !== 'string') window.__screen += decode.decode(new Uint8Array(e.data), {stream: true}); });
    return ws; };
  window.WebSocket.prototype = Native.prototype; Object.assign(window.WebSocket, Native); })();"""
_ESCAPES = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def _serve(where: Path, *args: str) -> Iterator[str]:
    # The served runs save their sessions in ``where``, never in the checkout (its sessions/ holds the examples).
    with serving(where, "--demo", *args) as served:
        yield served.url


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[str]:
    yield from _serve(tmp_path)


@pytest.fixture()
def spectated(tmp_path: Path) -> Iterator[str]:
    yield from _serve(tmp_path, "--spectate")


def screen_text(page: Any) -> str:
    return _ESCAPES.sub("", page.evaluate("() => window.__screen"))


WORKERS = ("Developer", "Researcher", "Tester", "Designer")


def _wait_for_panes(page: Any, names: tuple[str, ...] = WORKERS, timeout: float = 120.0) -> None:
    """The workers' pane titles, with their status, have reached the page's terminal."""
    titles = [re.compile(rf"{name} \[(waiting|working|done)") for name in names]
    deadline = time.monotonic() + timeout
    while not all(t.search(screen_text(page)) for t in titles):
        assert time.monotonic() < deadline, "the agent panes never reached the page"
        page.wait_for_timeout(250)


def test_serve_demo_renders_the_agent_panes_in_the_page(browser: Any, served: str, shots: Path) -> None:
    for width, height in SIZES:
        watched = open_page(browser, served, width=width, height=height, init_script=RECORD)
        # A phone's width stacks the panes: the first ones fill the screen, the rest are a scroll away.
        _wait_for_panes(watched.page, WORKERS if width > 600 else WORKERS[:2])
        for _ in range(40):  # a picture of the run going, not of its first frame (best effort, not a check)
            if "[done]" in screen_text(watched.page):
                break
            watched.page.wait_for_timeout(500)
        watched.page.screenshot(path=str(shots / f"serve-{width}x{height}.png"))
        assert "Manager" in screen_text(watched.page)
        here = served.rstrip("/")  # the page loads nothing from anywhere else (its font comes from the server)
        assert all(url.startswith((here, here.replace("http", "ws"), "data:")) for url in watched.requests), \
            watched.requests
        watched.page.context.close()


@contextmanager
def _another_site(folder: Path) -> Iterator[str]:
    """A real web site on this machine, at another origin than the served page's (another port)."""
    folder.mkdir()
    (folder / "index.html").write_text("<!DOCTYPE html><title>elsewhere</title>", encoding="utf-8")
    site = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(folder)))
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{site.server_address[1]}"
    finally:
        site.shutdown()
        site.server_close()


def test_a_page_on_another_site_cannot_open_the_app(browser: Any, tmp_path: Path) -> None:
    """Cross-site WebSocket hijacking: a page the user visits elsewhere tries the served app's socket."""
    with serving(tmp_path, "--demo") as served, _another_site(tmp_path / "elsewhere") as elsewhere:
        context = browser.new_context()
        page = context.new_page()
        page.goto(elsewhere + "/")
        outcome = page.evaluate("""url => new Promise(done => {
            const ws = new WebSocket(url);
            ws.onopen = () => done('open'); ws.onerror = () => done('refused'); })""",
                                f"ws://127.0.0.1:{served.port}/ws?width=80&height=24")
        context.close()
        said = served.stderr_now()
    assert outcome == "refused", said
    assert [line for line in said if f"refused a connection from Origin {elsewhere!r}" in line], said
    assert not list(tmp_path.glob("*.json"))  # no app started, no run saved


def test_the_session_cap_holds_and_the_next_page_says_so(browser: Any, tmp_path: Path, shots: Path) -> None:
    with serving(tmp_path, "--demo", "--max-sessions", "1") as served:
        first = open_page(browser, served.url, init_script=RECORD)
        _wait_for_panes(first.page)
        second = browser.new_context().new_page()
        answer = second.goto(served.url)
        assert answer is not None and answer.status == 503
        text = second.inner_text("body")
        second.screenshot(path=str(shots / "serve-full-1280x720.png"))
        second.context.close()
        first.page.context.close()
    assert "all sessions are in use" in text and "--max-sessions 1" in text


def test_served_from_a_folder_with_its_own_tui_and_sessions_the_page_works(browser: Any, tmp_path: Path) -> None:
    marker = hostile_folder(tmp_path)
    with serving(tmp_path, "--demo") as served:
        watched = open_page(browser, served.url, init_script=RECORD)
        _wait_for_panes(watched.page)
        watched.page.context.close()
    assert not marker.exists()


def test_a_spectator_is_refused_the_step_key_in_one_line(browser: Any, spectated: str, shots: Path) -> None:
    watched = open_page(browser, spectated, width=1280, height=800, init_script=RECORD)
    page = watched.page
    _wait_for_panes(page)
    page.click(".textual-terminal")
    deadline = time.monotonic() + 60
    while "spectating: this view cannot change the run" not in " ".join(screen_text(page).split()):
        assert time.monotonic() < deadline, "the step key was never refused on the page"
        page.keyboard.press("n")  # again while the app is still starting: a key before its screen is lost
        page.wait_for_timeout(2000)
    assert " ".join(REFUSAL.split()[:6]) in " ".join(screen_text(page).split())
    page.wait_for_timeout(500)
    page.screenshot(path=str(shots / "spectate-1280x800.png"))
