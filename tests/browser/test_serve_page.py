"""``swarm-tui serve --demo`` in Chromium: the agent panes reach the page, and a spectator's step key is
refused in one line. The served terminal draws on a canvas, so the page's text is read where it arrives: the
bytes its websocket hands to the terminal (recorded by a script the test adds to the page)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import SIZES, open_page
from tui.spectate import REFUSAL

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
RECORD = """(() => { window.__screen = ''; const decode = new TextDecoder(); const Native = window.WebSocket;
  window.WebSocket = function (url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    ws.addEventListener('message', e => {
      if (typeof e.data !== 'string') window.__screen += decode.decode(new Uint8Array(e.data), {stream: true}); });
    return ws; };
  window.WebSocket.prototype = Native.prototype; Object.assign(window.WebSocket, Native); })();"""
_ESCAPES = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(where: Path, *args: str) -> Iterator[str]:
    port = _free_port()
    # The served runs save their sessions in ``where``, never in the checkout (its sessions/ holds the examples).
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "SWARM_TUI_SESSIONS_DIR": str(where)}
    # A session of its own: the server starts a shell and an app per browser, all ended with it.
    server = subprocess.Popen([sys.executable, "-m", "tui", "serve", "--port", str(port), "--demo", *args],
                              cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None, server.stdout.read().decode() if server.stdout else ""
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


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
