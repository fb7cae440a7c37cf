"""Where a traced run's spans go (core.telemetry.setup decides it; core.telemetry.sink sends them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TraceTarget:
    """Where a traced run's spans go, and what they may hold."""

    endpoint: str  # the full OTLP/HTTP traces URL
    service: str
    capture_content: bool
