"""Whether a run is traced, and where to: the settings' ``otel_endpoint`` (``--otel URL``, config
``otel_endpoint``) or the standard OpenTelemetry variables, read without importing OpenTelemetry.

* ``OTEL_SDK_DISABLED=true`` turns tracing off whatever else is set.
* ``--otel URL`` / ``otel_endpoint``: the collector's OTLP/HTTP base URL (``/v1/traces`` is added) or its
  full traces URL.
* Else ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as is), ``OTEL_EXPORTER_OTLP_ENDPOINT`` (``/v1/traces``
  added), or ``OTEL_SERVICE_NAME`` alone (the SDK's default collector, ``http://localhost:4318``).
* ``OTEL_SERVICE_NAME`` names the service (default ``swarm-tui``).
* ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (the GenAI conventions' opt-in) adds message
  contents (the problem, replies, steering text); without it a trace holds no text the model or the user
  wrote. A key is never in a trace.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from core.runtime.config import ConfigError, Settings
from core.telemetry.target import TraceTarget

if TYPE_CHECKING:
    from core.telemetry.sink import TraceSink

INSTALL_HINT = "tracing needs the otel extra: pip install 'swarm-tui[otel]'"
DEFAULT_COLLECTOR = "http://localhost:4318"
TRACES_PATH = "/v1/traces"
TRUE = ("1", "true", "yes", "on")


def _flag(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").strip().lower() in TRUE


def traces_url(base: str) -> str:
    """A collector's traces URL: a base URL gets ``/v1/traces``; a URL that ends in it is kept."""
    base = base.strip()
    return base if base.rstrip("/").endswith(TRACES_PATH) else base.rstrip("/") + TRACES_PATH


def trace_target(settings: Settings, environ: Mapping[str, str] | None = None) -> TraceTarget | None:
    """Where this run's trace goes, or None when it is not traced (the default)."""
    env = os.environ if environ is None else environ
    if _flag(env, "OTEL_SDK_DISABLED"):
        return None
    service = env.get("OTEL_SERVICE_NAME", "").strip() or "swarm-tui"
    if settings.otel_endpoint:
        endpoint = traces_url(settings.otel_endpoint)
    elif env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
        endpoint = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].strip()
    elif env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        endpoint = traces_url(env["OTEL_EXPORTER_OTLP_ENDPOINT"])
    elif env.get("OTEL_SERVICE_NAME", "").strip():
        endpoint = traces_url(DEFAULT_COLLECTOR)
    else:
        return None
    return TraceTarget(endpoint, service, _flag(env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"))


def otel_installed() -> bool:
    return all(importlib.util.find_spec(name) is not None
               for name in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"))


def check_tracing(settings: Settings) -> None:
    """ConfigError (one line, how to install) when ``--otel`` or ``otel_endpoint`` asks for traces and the
    extra is not installed; the OTEL_* variables alone are other programs' too, so they are only told of."""
    if settings.otel_endpoint and not otel_installed():
        raise ConfigError(f"--otel {settings.otel_endpoint}: {INSTALL_HINT}")


def trace_sink(settings: Settings, notice: Callable[[str], None] | None = None) -> TraceSink | None:
    """The run's trace sink, or None when the run is not traced. OpenTelemetry is imported here, and only
    when a run is traced: a run without tracing loads none of it (tests/test_import_hygiene.py)."""
    target = trace_target(settings)
    if target is None:
        return None
    if not otel_installed():
        if notice is not None:
            notice(f"the OTEL_* variables ask for a trace, but {INSTALL_HINT}")
        return None
    from core.telemetry.sink import TraceSink  # the optional extra, loaded only for a traced run

    return TraceSink(target)

