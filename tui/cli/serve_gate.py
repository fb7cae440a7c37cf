"""Who may open the served app: one aiohttp middleware in front of textual-serve's routes.

Whoever holds the page's WebSocket drives a run on the user's endpoint and key, so the gate
- refuses a WebSocket handshake whose ``Origin`` is not the served page's own (HTTP 403, one line on stderr):
  another web site the user visits cannot open the app in the background (cross-site WebSocket hijacking);
- caps the browser sessions open at once (``--max-sessions``): the next page says so instead of starting
  one more app process;
- for any host but loopback, asks for a random token (as Jupyter does): given once in the printed URL, then
  kept in a same-site, HttpOnly cookie that the page's WebSocket handshake carries.
textual-serve has no hook for any of this; its ``Server._make_app`` returns the aiohttp application, to
which ``tui.cli.serve_server`` appends a middleware that asks this gate (no fork of textual-serve). The rules
live here, apart from aiohttp, so the command line reads them without the ``web`` extra.
"""

from __future__ import annotations

import hmac
import secrets
import sys
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from core.runtime.textsafe import printable

TOKEN_PARAM = "token"
WS_PATH = "/ws"
OPEN_PATHS = ("/static/",)  # textual-serve's own scripts, styles and font: nothing of the user's
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def say(line: str) -> None:
    print(printable(f"swarm-tui serve: {line}"), file=sys.stderr, flush=True)


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL as a browser writes it in ``Origin``: lower case, no default port."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        return ""
    shown_port = f":{port}" if port is not None and port != _DEFAULT_PORTS.get(scheme) else ""
    return f"{scheme}://{host}{shown_port}"


def page_origins(public_url: str, port: int, loopback: bool) -> frozenset[str]:
    """The origins the page is served from: its public URL's, and on loopback every name of this machine."""
    local = {origin_of(f"http://{host}:{port}") for host in LOOPBACK_HOSTS} if loopback else set()
    return frozenset({origin_of(public_url), *local})


def new_token() -> str:
    return secrets.token_urlsafe(24)


@dataclass
class Gate:
    """The rules one server keeps, and the sessions it has open."""

    origins: frozenset[str]
    max_sessions: int
    token: str | None = None  # None: loopback, where the Origin check is the guard
    secure: bool = False  # the page is served over https: the cookie says so
    port: int = 0
    open_sessions: int = field(default=0, init=False)

    @property
    def cookie(self) -> str:
        return f"swarm_tui_token_{self.port}"  # one per port: two servers on one host keep their own

    def url(self, public_url: str) -> str:
        """The address to open: the page, with the token when one is needed."""
        base = public_url.rstrip("/") + "/"
        return f"{base}?{TOKEN_PARAM}={self.token}" if self.token else base

    def admits(self, given: str | None) -> bool:
        """``given``: the token from the URL or the cookie (None: neither has one)."""
        if self.token is None:
            return True
        return hmac.compare_digest((given or "").encode(), self.token.encode())

    def origin_allowed(self, origin: str | None) -> bool:
        return origin is not None and origin_of(origin) in self.origins

    @property
    def full(self) -> bool:
        return self.open_sessions >= self.max_sessions

    def full_text(self) -> str:
        return (f"{self.open_sessions} browser sessions are open, the most this server allows "
                f"(--max-sessions {self.max_sessions}). Close one of them and reload this page.")
