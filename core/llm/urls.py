"""Endpoint URLs: the check made before anything connects, and the forms of a URL without its secrets.

A leaf: the LLM client, the settings and the session records all use these, so they live below them.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

DEFAULT_BASE_URL = "http://localhost:1234/v1"  # LM Studio, the reference deployment's endpoint


MAX_URL_CHARS = 8192  # far past any real endpoint; the HTTP stack itself refuses 65,536


class URLError(ValueError):
    """An endpoint URL that cannot be used; the message is one line fit to show a user."""


def _http_stack_parses(url: str) -> None:
    """ValueError when the HTTP library the client sends with (httpx, or the SDK's httpx2 fork) would refuse
    the URL: better one line now than its traceback at the first request."""
    try:
        import httpx2 as httpx
    except ImportError:  # pragma: no cover - depends on the installed SDK
        import httpx  # type: ignore[no-redef]
    try:
        httpx.URL(url)
    except Exception as exc:  # InvalidURL and the like
        raise ValueError(str(exc)) from None


def check_base_url(url: str, *, allow_userinfo: bool = False) -> str:
    """The endpoint URL, checked before anything connects: http or https, a host, a port in 1..65535.
    URLError with one line otherwise. ``user:password@`` in the URL is refused (the HTTP client would
    send it as Basic auth instead of the API key) unless ``allow_userinfo``."""
    shown = url if len(url) <= 200 else url[:199] + "…"
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in shown)  # never a control byte out
    if len(url) > MAX_URL_CHARS:
        raise URLError(f"the endpoint URL is {len(url):,} characters long: the limit is {MAX_URL_CHARS:,}")
    bad = next((c for c in url.strip() if not c.isprintable()), None)
    if bad is not None:
        raise URLError(f"the endpoint URL '{shown}' holds the control character {bad!r}: type it again")
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError as exc:  # "Invalid IPv6 URL"
        raise URLError(f"the endpoint URL {shown!r} cannot be parsed ({exc}): e.g. {DEFAULT_BASE_URL}") from None
    try:
        port = parts.port
    except ValueError:  # out of range, or not a number
        text = parts.netloc.rpartition(":")[2]
        raise URLError(f"the endpoint URL {shown!r} has port {text!r}: it must be a number 1..65535") from None
    if parts.scheme.lower() not in ("http", "https"):
        got = f"{parts.scheme!r}" if parts.scheme else "none"
        raise URLError(f"the endpoint URL {shown!r} must start with http:// or https:// (scheme: {got})")
    if not host:
        raise URLError(f"the endpoint URL {shown!r} has no host: e.g. {DEFAULT_BASE_URL}")
    if port is not None and not 1 <= port <= 65535:
        raise URLError(f"the endpoint URL {shown!r} has port {port}: it must be a number 1..65535")
    if (parts.username is not None or parts.password is not None) and not allow_userinfo:
        raise URLError(
            "the endpoint URL holds a user name or password (user:password@): remove it and put the key in "
            "$OPENAI_API_KEY (or the variable named by --api-key-env), not in the URL"
        )
    try:  # last: the checks above say what is wrong in clearer words
        _http_stack_parses(url.strip())
    except ValueError as exc:
        raise URLError(f"the endpoint URL '{shown}' cannot be used: {str(exc)[:120]}") from None
    return url


def strip_userinfo(url: str) -> str:
    """The URL without ``user:password@`` (unchanged when it has none or cannot be parsed)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def redact_url(url: str) -> str:
    """The endpoint without anything that may carry a secret: user:password@ and the query string
    (some gateways take ?api-key=...). Never write a key into a session."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unparsable URL)"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")) if parts.scheme else url.split("?")[0]
