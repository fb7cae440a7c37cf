"""What went wrong with an endpoint, said in one line: the errors the client raises, whether an error means
the endpoint is down for good, and the user's message for it (with the API key cut out)."""

from __future__ import annotations

import openai

from core.llm.httpx_lib import httpx
from core.llm.stream import StreamError


class EndpointError(RuntimeError):
    """The endpoint cannot be used; the message is one line fit to show a user."""


class EndpointUnavailable(openai.APIConnectionError):
    """A call given up on: no answer in time, or rate limited beyond what we wait. The message is one line
    naming the URL. A kind of APIConnectionError, so every caller treats the endpoint as unusable for now
    (the engine ends the run when the Manager's call gets it, rather than calling the workers)."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message=message, request=httpx.Request("POST", url))


def seconds(value: float) -> str:
    """3 s, 0.5 s, 120 s: short, without trailing zeros."""
    return f"{value:.3g}" if value < 1000 else f"{value:.0f}"


_REFUSED = ("connection refused", "name or service not known", "nodename nor servname", "no route to host",
            "temporary failure in name resolution", "network is unreachable")


def connection_refused(exc: BaseException) -> bool:
    """Whether a connection error means nothing listens there (refused, no such host), as opposed to a
    connection that was made and then reset or dropped mid-call (the server is up)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or any(s in str(current).lower() for s in _REFUSED):
            return True
        current = current.__cause__ or current.__context__
    return False


def endpoint_down(exc: BaseException) -> bool:
    """Whether no later call can succeed either: nothing listens at the URL, the key is refused, or there is
    no such model, or it stayed silent (or asked to wait) past the bounds of first_byte_timeout and
    max_retry_wait. A reset or dropped connection, a 429 or a 5xx after the retries fails one call, not the run."""
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError | openai.NotFoundError):
        return True
    if isinstance(exc, EndpointUnavailable):  # gave up waiting: silent, or retrying past max_retry_wait
        return True
    if isinstance(exc, openai.APITimeoutError):
        return False
    return isinstance(exc, openai.APIConnectionError) and connection_refused(exc)


def describe_api_error(exc: BaseException, base_url: str) -> str:
    """One line for a user, naming the URL; never includes request headers (they hold the key)."""
    if isinstance(exc, EndpointUnavailable | StreamError):
        return exc.message
    if isinstance(exc, openai.APITimeoutError):
        return f"the model endpoint {base_url} timed out"
    if isinstance(exc, openai.APIConnectionError) and not connection_refused(exc):
        return f"the connection to {base_url} was reset or dropped during the call (the server is up)"
    if isinstance(exc, openai.APIConnectionError):
        return (
            f"cannot reach the model endpoint at {base_url}: start your server there, point elsewhere with "
            "--base-url URL (or OPENAI_BASE_URL), or try --demo"
        )
    if isinstance(exc, openai.AuthenticationError):
        return f"the endpoint {base_url} rejected the API key (status 401): check the variable named by --api-key-env"
    if isinstance(exc, openai.NotFoundError):
        return f"the endpoint {base_url} answered 404: check --base-url (it usually ends in /v1) and --model"
    if isinstance(exc, openai.APIStatusError):
        message = (str(getattr(exc, "message", "") or exc).splitlines() or [""])[0][:200]
        return f"the endpoint {base_url} answered status {exc.status_code}: {message}"
    return f"model call failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


# Placeholders sent when no key is set: not secrets, and too common to scrub from messages.
_PLACEHOLDER_KEYS = {"", "not-needed", "demo"}


def redact_secret(text: str, secret: str | None) -> str:
    if not secret or secret in _PLACEHOLDER_KEYS:
        return text
    return text.replace(secret, "***")
