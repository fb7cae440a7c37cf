"""textual-serve's server, as ``swarm-tui serve`` runs it: the gate in front (``tui.cli.serve_gate``), the font
from this server, no request log (a URL can carry the token), and the page's address printed last, alone,
once the port is open. Imports the ``web`` extra: ``tui.cli.serve`` imports this module once it knows the
extra is there."""

from __future__ import annotations

import asyncio
import logging
import re
import signal
import sys
from collections.abc import Awaitable, Callable
from html import escape
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware
from textual_serve.server import Server

from .serve_gate import OPEN_PATHS, TOKEN_PARAM, WS_PATH, Gate, say

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_WEB_FONT = re.compile(r"<link[^>]*fonts\.googleapis\.com[^>]*>", re.DOTALL)
# textual-serve's page asks a font service for its font; it ships the same font: the page takes that instead,
# so opening the app loads nothing from anywhere but this server.
_LOCAL_FONT = ('<style>@font-face{font-family:"Roboto Mono";'
               'src:url("/static/fonts/RobotoMono-VariableFont_wght.ttf") format("truetype")}</style>')


def local_fonts(page: str) -> str:
    return _WEB_FONT.sub(_LOCAL_FONT, page)


@web.middleware
async def no_web_font(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    if request.path == "/" and isinstance(response, web.Response) and response.text:
        response.text = local_fonts(response.text)
    return response


def _page(status: int, title: str, text: str) -> web.Response:
    body = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title></head>"
            "<body style='font-family:monospace;background:#0c181f;color:#eee;padding:2em'>"
            f"<h1>{escape(title)}</h1><p>{escape(text)}</p></body></html>")
    return web.Response(status=status, text=body, content_type="text/html")


def _given_token(gate: Gate, request: web.Request) -> str | None:
    return request.query.get(TOKEN_PARAM) or request.cookies.get(gate.cookie)


def gate_middleware(gate: Gate) -> Middleware:
    """The gate in front of every route but textual-serve's static files."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith(OPEN_PATHS):
            return await handler(request)
        if request.path == WS_PATH:
            return await _websocket(gate, request, handler)
        if not gate.admits(_given_token(gate, request)):
            return _page(403, "swarm-tui: this page needs its token",
                         "Open the address swarm-tui serve printed when it started: it carries the token.")
        if request.path == "/" and gate.full:
            return _page(503, "swarm-tui: all sessions are in use", gate.full_text())
        response = await handler(request)
        if gate.token is not None and request.query.get(TOKEN_PARAM):
            # The token from the URL, kept where the page's WebSocket handshake carries it (same site only).
            response.set_cookie(gate.cookie, gate.token, httponly=True, samesite="Strict", secure=gate.secure,
                                path="/")
        return response

    return guard


async def _websocket(gate: Gate, request: web.Request, handler: Handler) -> web.StreamResponse:
    origin = request.headers.get("Origin")
    if not gate.origin_allowed(origin):
        say(f"refused a connection from Origin {origin[:120] if origin else '(none)'!r}: "
            "not this page's own (another site tried to open the app)")
        raise web.HTTPForbidden(text="this page's own origin only")
    if not gate.admits(_given_token(gate, request)):
        say("refused a connection without the token")
        raise web.HTTPForbidden(text="the token is missing or wrong")
    if gate.full:
        say(f"refused a session: {gate.open_sessions} open, the most --max-sessions allows")
        raise web.HTTPServiceUnavailable(text="all sessions are in use")
    gate.open_sessions += 1
    try:
        return await handler(request)  # textual-serve's handler returns when the session ends
    finally:
        gate.open_sessions -= 1


class GatedServer(Server):
    """One browser session, one app process, for whoever the gate lets in."""

    def __init__(self, command: str, *, host: str, port: int, title: str, public_url: str, gate: Gate) -> None:
        super().__init__(command, host=host, port=port, title=title, public_url=public_url)
        self.gate = gate

    async def _make_app(self) -> web.Application:
        app: web.Application = await super()._make_app()
        app.middlewares.append(gate_middleware(self.gate))
        app.middlewares.append(no_web_font)
        return app

    async def on_startup(self, app: web.Application) -> None:
        """Nothing: textual-serve prints its logo and the whole command here (the run's problem with it)."""

    def announce(self, *_: Any) -> None:
        """The address to open, on stdout, last and alone: called once the port is open."""
        print(self.gate.url(self.public_url), flush=True)

    def initialize_logging(self) -> None:
        super().initialize_logging()
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # request lines would show the token

    def serve(self, debug: bool = False) -> None:
        """textual-serve's ``serve``, with the address printed after the port is open (a port in use raises
        OSError before anything says where to go)."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        for stop in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(stop, self.request_exit)
        try:
            web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                        print=self.announce, access_log=None)
        finally:
            if not loop.is_closed():
                loop.close()
            sys.stdout.flush()
