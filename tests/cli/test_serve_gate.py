"""Who may open ``swarm-tui serve``'s app, against the real server on 127.0.0.1 with an aiohttp client: another
site's Origin is refused, the session cap holds, a non-loopback host needs the printed token, the address is
printed last and alone, and a working folder with its own ``tui/`` and ``sessions/`` runs nothing of its own."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import aiohttp

from tests.support.serve import Served, free_port, hostile_folder, serving, terminal_text
from tui.cli.serve import command, safe_pythonpath, startup_notes
from tui.cli.serve_gate import Gate, origin_of, page_origins

PANE = re.compile(r"Developer \[(waiting|working|done)")


async def _handshake(served: Served, origin: str | None, cookies: dict[str, str] | None = None) -> int:
    """The status of a WebSocket handshake to the page's /ws (101 when it opened; closed at once)."""
    headers = {"Origin": origin} if origin else {}
    async with aiohttp.ClientSession(cookies=cookies) as session:
        try:
            async with session.ws_connect(f"{served.origin}/ws?width=80&height=24", headers=headers):
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


async def _screen_until(ws: aiohttp.ClientWebSocketResponse, pattern: re.Pattern[str], timeout: float) -> str:
    seen, deadline = "", time.monotonic() + timeout
    while not pattern.search(terminal_text(seen)):
        assert time.monotonic() < deadline, "the app's screen never reached the client"
        message = await ws.receive(timeout=timeout)
        assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), "the session ended"
        if message.type == aiohttp.WSMsgType.BINARY:
            seen += message.data.decode("utf-8", "replace")
    return seen


def test_the_pages_own_origins_are_its_public_urls_and_on_loopback_this_machines_names() -> None:
    assert origin_of("HTTP://LocalHost:8000/x?y") == "http://localhost:8000"
    assert origin_of("https://example.org:443/swarm") == "https://example.org"
    local = page_origins("http://127.0.0.1:8000", 8000, loopback=True)
    assert {"http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"} == local
    assert page_origins("https://swarm.example/app", 8000, loopback=False) == {"https://swarm.example"}
    gate = Gate(local, max_sessions=1)
    assert gate.origin_allowed("http://localhost:8000") and not gate.origin_allowed("http://evil.example")
    assert not gate.origin_allowed(None) and not gate.origin_allowed("null")
    assert not gate.origin_allowed("http://127.0.0.1:8001")  # another port is another site


def test_a_token_is_compared_whole() -> None:
    gate = Gate(frozenset(), max_sessions=1, token="s3cret-token", port=8000)
    assert gate.admits("s3cret-token") and not gate.admits("s3cret") and not gate.admits(None)
    assert gate.url("http://h:8000") == "http://h:8000/?token=s3cret-token"
    assert Gate(frozenset(), max_sessions=1).admits(None)  # loopback: no token


def test_all_interfaces_without_public_url_say_the_page_points_at_ws_0000_and_what_fixes_it() -> None:
    notes = startup_notes("0.0.0.0", 8000, spectate=False, public_url=None)
    assert any("ws://0.0.0.0:8000" in n and "--public-url" in n for n in notes)
    assert not any("ws://0.0.0.0" in n for n in startup_notes("0.0.0.0", 8000, False, "http://192.0.2.7:8000"))
    assert startup_notes("127.0.0.1", 8000, spectate=False, public_url=None) == []


def test_the_app_is_started_without_the_working_folder_on_its_import_path() -> None:
    line = command(["--demo"], spectate=False, environ={"PYTHONPATH": f"/opt/lib::relative:{Path.cwd()}"})
    assert " -P -m tui --demo" in line and line.startswith("PYTHONSAFEPATH=1 ")
    assert f"PYTHONPATH=/opt/lib:{Path.cwd()}" in line  # "" and "relative" meant the working folder
    assert safe_pythonpath({}) == "" and "PYTHONPATH= " in command(["--demo"], False, environ={})


async def test_another_sites_origin_is_refused_with_403_and_one_line(tmp_path: Path) -> None:
    with serving(tmp_path, "--demo") as served:
        assert await _handshake(served, "http://evil.example") == 403
        assert await _handshake(served, None) == 403  # a browser always sends one
        said = served.stderr_now()
    refusals = [line for line in said if "refused" in line]
    assert len(refusals) == 2 and "'http://evil.example': not this page's own" in refusals[0]
    assert not any("Traceback" in line for line in said)
    assert not list(tmp_path.glob("*.json"))  # no app process started, no run saved


async def test_the_session_cap_holds_and_the_next_page_says_so(tmp_path: Path) -> None:
    with serving(tmp_path, "--demo", "--max-sessions", "1") as served:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"{served.origin}/ws?width=80&height=24",
                                          headers={"Origin": served.origin}):
                assert await _handshake(served, served.origin) == 503
                async with session.get(served.url) as page:
                    assert page.status == 503
                    assert "--max-sessions 1" in await page.text()
            deadline = time.monotonic() + 30  # the first session's app is stopped: the page opens again
            while True:
                async with session.get(served.url) as page:
                    if page.status == 200:
                        break
                assert time.monotonic() < deadline, "the ended session was never freed"
                await asyncio.sleep(0.5)
        assert any("the most --max-sessions allows" in line for line in served.stderr_now())


async def test_a_host_other_than_loopback_needs_the_token_printed_once_with_the_address(tmp_path: Path) -> None:
    # Every interface, reached here through 127.0.0.1 (the address given as --public-url).
    port = free_port()
    with serving(tmp_path, "--demo", "--host", "0.0.0.0", "--public-url", f"http://127.0.0.1:{port}",
                 port=port) as served:
        assert served.stdout == [served.url]  # the address alone: no logo, no quoted problem
        assert re.fullmatch(rf"http://127\.0\.0\.1:{port}/\?token=[A-Za-z0-9_-]{{32}}", served.url), served.url
        token = served.url.split("token=")[1]
        assert any("every network interface" in line for line in served.stderr_now())
        assert not any(token in line for line in served.stderr)  # printed once, with the address
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/") as page:
                assert page.status == 403 and "needs its token" in await page.text()
            async with session.get(f"{base}/?token=wrong") as page:
                assert page.status == 403
            assert await _handshake(served, base) == 403
            async with session.get(served.url) as page:
                assert page.status == 200
                cookie = page.cookies[f"swarm_tui_token_{port}"]
                assert cookie.value == token and cookie["httponly"] and cookie["samesite"] == "Strict"
        assert await _handshake(served, base, cookies={cookie.key: cookie.value}) == 101
        assert await _handshake(served, "http://evil.example", cookies={cookie.key: cookie.value}) == 403


async def test_served_from_a_folder_with_its_own_tui_and_sessions_the_app_runs_and_nothing_of_the_folder(
    tmp_path: Path,
) -> None:
    marker = hostile_folder(tmp_path)
    with serving(tmp_path, "--demo") as served:
        async with aiohttp.ClientSession() as session, session.ws_connect(
            f"{served.origin}/ws?width=160&height=48", headers={"Origin": served.origin}
        ) as ws:
            await _screen_until(ws, PANE, timeout=120)
    assert not marker.exists()
