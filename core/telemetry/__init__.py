"""OpenTelemetry traces of runs: one more consumer of the event stream (docs/architecture.md, rule 2).

``setup`` decides from the settings and the standard ``OTEL_*`` variables whether a run is traced, without
importing OpenTelemetry; ``sink`` (loaded only then) turns the events into spans per the GenAI semantic
conventions. The composition layer (core.compose.assembly) adds the sink beside the face's own.
"""
