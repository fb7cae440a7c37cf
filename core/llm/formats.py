"""Structured output, negotiated with the endpoint: a call that names a contract's JSON schema asks for
``response_format`` of type ``json_schema``; a server that rejects it is asked for ``json_object``, then for
nothing, and each client remembers what its endpoint accepted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import openai


class FormatKind(StrEnum):
    """The response_format types asked for, strongest first."""

    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"


def format_kind(request: dict[str, Any]) -> FormatKind | None:
    """The response_format type a request asks for; None when it asks for none."""
    kind = (request.get("response_format") or {}).get("type")
    return FormatKind(kind) if kind in set(FormatKind) else None


@dataclass
class FormatSupport:
    """What the endpoint accepts as response_format, learned on the first calls (None: not known yet)."""

    schema_supported: bool | None = None
    json_mode_supported: bool | None = None

    def choose(self, json_mode: bool, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        """The strongest response_format not known to be rejected."""
        if json_mode and schema is not None and self.schema_supported is not False:
            return {"type": FormatKind.JSON_SCHEMA.value, "json_schema": schema}
        if json_mode and self.json_mode_supported is not False:
            return {"type": FormatKind.JSON_OBJECT.value}
        return None

    def rejected(self, request: dict[str, Any], exc: openai.APIStatusError,
                 on_retry: Callable[[str], None] | None) -> bool:
        """A 400/422 for a response_format we had not seen accepted: remember, and True to ask again with
        the next weaker one (json_schema -> json_object -> none)."""
        kind = format_kind(request)
        if kind is FormatKind.JSON_SCHEMA and self.schema_supported is None:
            self.schema_supported = False
            if on_retry:
                on_retry(f"endpoint rejected JSON-schema output ({exc.status_code}); asking for JSON mode instead")
            return True
        if kind is FormatKind.JSON_OBJECT and self.json_mode_supported is None:
            # Some servers reject JSON mode; ask again without it and remember.
            self.json_mode_supported = False
            if on_retry:
                on_retry(f"endpoint rejected JSON mode ({exc.status_code}); continuing without it")
            return True
        return False

    def accepted(self, request: dict[str, Any]) -> None:
        """The request succeeded: its response_format works on this endpoint."""
        kind = format_kind(request)
        if kind is FormatKind.JSON_SCHEMA:
            self.schema_supported = True
        elif kind is FormatKind.JSON_OBJECT:
            self.json_mode_supported = True
