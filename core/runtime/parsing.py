"""Parsing model replies into the worker / descriptor / manager contracts (core.runtime.prompts).

Models wrap JSON in reasoning tags, Markdown fences and prose, and break it in small ways (trailing
commas, single quotes, a truncated end). We strip the wrapping, try strict JSON, then repair with
json_repair. Field names are matched loosely: ours (core.runtime.prompts) and the paper's Appendix B
spellings ("public content", "q vector", "is complete", ...), in any case, with spaces, underscores,
hyphens or camelCase. The public functions raise nothing but ParseError, whose message is one short
line naming what is wrong: the engine feeds it back to the model in a re-ask.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from core.runtime.copies import ECHOED, INSTEAD, copied_fields, echoes, is_slot, without_copied_notes
from core.runtime.copies import describe as describe_copy


class ParseError(ValueError):
    """A reply cannot be used; str(e) is one short line saying why."""


class TemplateCopied(ParseError):
    """A reply that copied the reply shape's slots into fields it must write (core.runtime.copies)."""

    def __init__(self, fields: list[str], instead: str = INSTEAD) -> None:
        super().__init__(describe_copy(fields, instead))
        self.fields = fields


COPIED_ERROR = ECHOED  # how every TemplateCopied's message begins (a copied slot, or echoed instructions)


def is_template_copy(error: str) -> bool:
    """A call's error says its last reply copied the reply template (CallOutcome.error)."""
    return error.startswith(COPIED_ERROR)


def _refuse_copies(fields: dict[str, str]) -> None:
    copied = copied_fields(fields)
    if copied:
        raise TemplateCopied(copied)


ECHO_INSTEAD = "do what it asks and write your own answer to this problem"


def own_text(instructions: Sequence[str]) -> Callable[[str], str]:
    """The parser of a plain-text call whose reply must be the agent's own: TemplateCopied when the reply only
    repeats ``instructions`` (the app's own words: the ask, the role's job, the reply format; never the
    problem nor a teammate's quoted work), else the text as it came (core.runtime.copies.echoes)."""
    told = tuple(instructions)

    def parse(text: str) -> str:
        if echoes(strip_reasoning(text), told):
            raise TemplateCopied([], ECHO_INSTEAD)
        return text

    return parse


@dataclass
class WorkerOutput:
    public: str
    private: dict[str, str]
    query: str
    key: str
    answer: str = ""


@dataclass
class DescriptorOutput:
    query: str
    key: str


@dataclass
class ManagerOutput:
    goal: str
    terminate: bool
    reasoning: str
    final_answer: str


# --- field name aliases (normalised form -> our field) ---------------------------------------------

_WORKER_ALIASES: dict[str, tuple[str, ...]] = {
    "public": ("public", "public content"),
    "private": ("private", "private content"),
    "query": ("query", "q desc", "q vector", "query descriptor", "query desc"),
    "key": ("key", "k desc", "k vector", "key descriptor", "key desc"),
    "answer": ("answer", "final answer"),
}
_MANAGER_ALIASES: dict[str, tuple[str, ...]] = {
    "goal": ("goal", "next goal"),
    "terminate": ("terminate", "is complete"),
    "reasoning": ("reasoning", "public content", "public"),
    "final_answer": ("final answer", "answer"),
}
_FIELD_HINTS = {
    "public": "your contribution this round",
    "query": "what you need next",
    "key": "what you can provide",
    "goal": "the next round's goal",
    "terminate": "true or false",
}

_TRUE_WORDS = {"true", "yes", "y", "1", "complete", "done"}
_FALSE_WORDS = {"false", "no", "n", "0", "incomplete", "not complete"}


def _normalise_key(name: str) -> str:
    """'Public_Content', 'publicContent', 'q-vector ' -> 'public content', 'q vector'."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return " ".join(re.split(r"[\s_\-]+", spaced.strip().lower())).strip()


def _lookup(data: dict[str, Any], aliases: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """Our field -> value, taking the first alias present (ours come first so they win)."""
    normalised: dict[str, Any] = {}
    for raw_key, value in data.items():
        normalised.setdefault(_normalise_key(str(raw_key)), value)
    found: dict[str, Any] = {}
    for name, spellings in aliases.items():
        for spelling in spellings:
            if spelling in normalised and normalised[spelling] is not None:
                found[name] = normalised[spelling]
                break
    return found


# --- text clean-up ---------------------------------------------------------------------------------

_THINK_BLOCK_RE = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_THINK_OPEN_RE = re.compile(r"<think(?:ing)?>", re.I)
_THINK_CLOSE_RE = re.compile(r"</think(?:ing)?>", re.I)
_FENCE_RE = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)```", re.S)


def strip_reasoning(text: str) -> str:
    """Remove <think>...</think> blocks. Also: text before an orphan </think> (templates that put the
    opening tag in the prompt), and an unclosed leading <think> block, which runs to the end of the
    reply (the model ran out of tokens while thinking)."""
    out = _THINK_BLOCK_RE.sub("", text)
    closes = list(_THINK_CLOSE_RE.finditer(out))
    if closes:
        out = out[closes[-1].end() :]
    opened = _THINK_OPEN_RE.search(out)
    if opened and not out[: opened.start()].strip():
        out = ""
    return out.strip()


def _object_spans(text: str) -> list[str]:
    """Top-level {...} spans, scanning strings so braces inside them do not count. An object still
    open at the end of the text (truncated reply) is returned up to the end for the repair pass."""
    spans: list[str] = []
    i, n = 0, len(text)
    while i < n:
        start = text.find("{", i)
        if start < 0:
            break
        depth, in_string, escaped, j = 0, False, False, start
        while j < n:
            ch = text[j]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        spans.append(text[start : j + 1])
        i = j + 1
    return spans


def _strict(candidate: str) -> dict[str, Any] | None:
    try:
        value = json.loads(candidate, strict=False)  # strict=False: raw newlines inside strings
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _repaired(candidate: str) -> dict[str, Any] | None:
    # Imported on the first broken reply, not at start-up: most replies parse, and the first request waits
    # for every import before it (bench/first_request.py).
    import json_repair

    try:
        value = json_repair.repair_json(candidate, return_objects=True)
    except Exception:  # the repair library's failure modes are not part of our contract
        return None
    return value if isinstance(value, dict) else None


def _find_object(text: str) -> dict[str, Any] | None:
    # Spans of the whole text first: fences outside the JSON are just prose to the scanner, while a
    # JSON string may itself hold ``` fences (code) that a fence pattern would cut in the middle.
    spans = _object_spans(text)
    valid = [value for span in spans if (value := _strict(span)) is not None]
    if valid:
        # Several objects (an example in the prose, then the reply): the reply is the biggest.
        return max(valid, key=lambda v: len(json.dumps(v)))
    fenced = [m.group(1) for m in _FENCE_RE.finditer(text) if "{" in m.group(1)]
    for source_spans in (spans, *(_object_spans(block) for block in fenced)):
        # Longest first: the outermost object, not a stray "{x}" in the prose before it. An empty
        # object is kept as a last resort so the error names the missing fields.
        empty: dict[str, Any] | None = None
        for span in sorted(source_spans, key=len, reverse=True):
            value = _repaired(span.rstrip().removesuffix("```"))  # a truncated object runs into the fence
            if value:
                return value
            if value is not None:
                empty = value
        if empty is not None:
            return empty
    return None


def _extract(text: str) -> dict[str, Any]:
    if not isinstance(text, str):
        raise ParseError(f"expected the reply as text, got {type(text).__name__}")
    if not text.strip():
        raise ParseError("the reply is empty")
    cleaned = strip_reasoning(text)
    value = _find_object(cleaned) if cleaned else None
    if value is None and cleaned != text.strip():
        # A model that forgot to close <think> may still have put the JSON inside it.
        value = _find_object(_THINK_CLOSE_RE.sub("", _THINK_OPEN_RE.sub("", text)))
        if value is None and not cleaned:
            raise ParseError("the reply ended inside a <think> block, with no JSON object after it")
    if value is None:
        raise ParseError("no JSON object found in the reply")
    return value


T = TypeVar("T")


def _guarded(parse: Callable[[str], T], text: str) -> T:
    """Run a parser so that only ParseError ever escapes (json can hit RecursionError, etc.)."""
    try:
        return parse(text)
    except ParseError:
        raise
    except Exception as exc:
        raise ParseError(f"unreadable reply ({type(exc).__name__})") from None


def extract_json_object(text: str) -> dict[str, Any]:
    """The one JSON object in a reply: think tags, fences and surrounding prose removed, repaired if
    needed. ParseError if there is none."""
    return _guarded(_extract, text)


# --- value coercion --------------------------------------------------------------------------------


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, ensure_ascii=False)  # a list/object/number stays readable and lossless


def _required_text(found: dict[str, Any], name: str) -> str:
    label = name.replace("_", " ")
    if name not in found:
        hint = _FIELD_HINTS.get(name)
        raise ParseError(f"missing field {label!r}" + (f" ({hint})" if hint else ""))
    text = _as_text(found[name])
    if not text:
        raise ParseError(f"field {label!r} is empty")
    return text


def _private(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for target, note in value.items():
            if note is None:
                continue
            text = _as_text(note)
            if text:
                out[str(target).strip()] = text
        return out
    text = _as_text(value)
    return {"all": text} if text else {}


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".").lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    shown = value if isinstance(value, str) else json.dumps(value)
    raise ParseError(f"field 'terminate' must be true or false, got {str(shown)[:40]!r}")


# --- contracts -------------------------------------------------------------------------------------


# A field the contract needs that repeats a slot of the reply shape makes the reply a copy (TemplateCopied,
# re-asked once); an optional field or private note that does is dropped (never routed, never an answer).
def _own(text: str) -> str:
    return "" if is_slot(text) else text


def _parse_worker(text: str) -> WorkerOutput:
    found = _lookup(_extract(text), _WORKER_ALIASES)
    public = _required_text(found, "public")
    query = _required_text(found, "query")
    key = _required_text(found, "key")
    _refuse_copies({"public": public, "query": query, "key": key})
    answer = _own(_as_text(found["answer"])) if "answer" in found else ""
    private = without_copied_notes(_private(found.get("private")))
    return WorkerOutput(public=public, private=private, query=query, key=key, answer=answer)


def _parse_work(text: str) -> WorkerOutput:
    found = _lookup(_extract(text), _WORKER_ALIASES)
    public = _required_text(found, "public")
    _refuse_copies({"public": public})
    query = _own(_as_text(found["query"])) if "query" in found else ""
    key = _own(_as_text(found["key"])) if "key" in found else ""
    answer = _own(_as_text(found["answer"])) if "answer" in found else ""
    private = without_copied_notes(_private(found.get("private")))
    return WorkerOutput(public=public, private=private, query=query, key=key, answer=answer)


def _parse_descriptors(text: str) -> DescriptorOutput:
    found = _lookup(_extract(text), _WORKER_ALIASES)
    query, key = _required_text(found, "query"), _required_text(found, "key")
    _refuse_copies({"query": query, "key": key})
    return DescriptorOutput(query=query, key=key)


def _parse_manager(text: str) -> ManagerOutput:
    found = _lookup(_extract(text), _MANAGER_ALIASES)
    if "terminate" not in found:
        raise ParseError("missing field 'terminate' (true or false)")
    terminate = _bool(found["terminate"])
    goal = _as_text(found["goal"]) if "goal" in found else ""
    if not terminate and not goal:
        raise ParseError("missing field 'goal' (the next round's goal, required when not terminating)")
    final_answer = _as_text(found["final_answer"]) if "final_answer" in found else ""
    _refuse_copies({"final_answer": final_answer} if terminate else {"goal": goal})
    return ManagerOutput(
        goal=_own(goal),
        terminate=terminate,
        reasoning=_own(_as_text(found["reasoning"])) if "reasoning" in found else "",
        final_answer=_own(final_answer),
    )


def parse_worker(text: str) -> WorkerOutput:
    """A full work reply: public, query and key required; private and answer optional."""
    return _guarded(_parse_worker, text)


def parse_work(text: str) -> WorkerOutput:
    """A phased work reply (phase C, and the round-1 broadcast): public required; the round's descriptors
    came from phase A, so query and key are optional here."""
    return _guarded(_parse_work, text)


def parse_descriptors(text: str) -> DescriptorOutput:
    """A descriptor-only reply: query and key required (a full work reply also qualifies)."""
    return _guarded(_parse_descriptors, text)


def parse_manager(text: str) -> ManagerOutput:
    """A Manager reply: terminate required; goal required unless terminating."""
    return _guarded(_parse_manager, text)


# What each parser's re-ask asks for (core.runtime.prompts.repair_request): the contract's own field names.
parse_worker.reply_format = "ONLY one JSON object with the fields public, private, query and key"  # type: ignore[attr-defined]
parse_work.reply_format = "ONLY one JSON object with the fields public and private"  # type: ignore[attr-defined]
parse_descriptors.reply_format = "ONLY one JSON object with the fields query and key"  # type: ignore[attr-defined]
parse_manager.reply_format = (  # type: ignore[attr-defined]
    "ONLY one JSON object with the fields goal, terminate, reasoning and final_answer"
)


# --- structured output ----------------------------------------------------------------------------
# JSON schemas of the contracts, for servers that constrain decoding (``response_format`` of type
# ``json_schema``; core.llm.client falls back to ``json_object``, then to none). They say what the prompts
# say (core.runtime.prompts); "strict" stays off, so a server may still add or omit a field and the
# parsers above stay the judge.

_TEXT = {"type": "string"}

WORKER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "public": _TEXT,
        "private": {"type": "object", "additionalProperties": _TEXT},
        "query": _TEXT,
        "key": _TEXT,
        "answer": _TEXT,  # only the math answer role is asked for it
    },
    "required": ["public", "private", "query", "key"],
}
WORK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"public": _TEXT, "private": WORKER_SCHEMA["properties"]["private"], "answer": _TEXT},
    "required": ["public", "private"],
}
DESCRIPTOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": _TEXT, "key": _TEXT},
    "required": ["query", "key"],
}
MANAGER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"goal": _TEXT, "terminate": {"type": "boolean"}, "reasoning": _TEXT, "final_answer": _TEXT},
    "required": ["goal", "terminate", "reasoning", "final_answer"],
}


def response_schema(parser: Callable[[str], Any]) -> dict[str, Any] | None:
    """The ``json_schema`` object (name and schema) for the contract a parser reads; None for another
    parser."""
    schemas: dict[Callable[[str], Any], tuple[str, dict[str, Any]]] = {
        parse_worker: ("worker_reply", WORKER_SCHEMA),
        parse_work: ("work_reply", WORK_SCHEMA),
        parse_descriptors: ("descriptors", DESCRIPTOR_SCHEMA),
        parse_manager: ("manager_decision", MANAGER_SCHEMA),
    }
    named = schemas.get(parser)
    if named is None:
        return None
    return {"name": named[0], "schema": named[1], "strict": False}


@dataclass
class ReplyTally:
    """Model calls that got a reply, and how many of those parsed into their contract (a re-ask that
    parsed counts as parsed). A run reports both at its end (RunFinished.replies_parsed / _total)."""

    parsed: int = 0
    total: int = 0
    copied: int = 0  # of those not parsed, the replies that copied the reply template (even after a re-ask)

    def count(self, *, replied: bool, parsed: bool, copied: bool = False) -> None:
        if replied:
            self.total += 1
            self.parsed += int(parsed)
            self.copied += int(copied and not parsed)


def contract_warning(parsed: int, total: int, copied: int = 0) -> str | None:
    """What to tell the user at the end of a run about replies that broke the JSON contract: None when
    most parsed (or nothing was counted), a plain sentence otherwise; replies that copied the reply template
    are named ("N copied the reply template")."""
    if total <= 0 or parsed < 0:
        return None
    copies = f"; {copied} copied the reply template" if copied else ""
    if parsed == 0:
        why = "the model copied the reply template instead of answering" if copied * 2 >= total else (
            "the model is not following the JSON contract")
        return f"0 of {total} replies parsed{copies}: {why}"
    if parsed * 2 < total:
        return f"only {parsed} of {total} replies parsed{copies}: the model often breaks the JSON contract"
    if copied:
        return f"{parsed} of {total} replies parsed{copies}"
    return None


__all__ = [
    "DESCRIPTOR_SCHEMA",
    "MANAGER_SCHEMA",
    "WORKER_SCHEMA",
    "DescriptorOutput",
    "ManagerOutput",
    "ParseError",
    "ReplyTally",
    "TemplateCopied",
    "WorkerOutput",
    "contract_warning",
    "extract_json_object",
    "is_template_copy",
    "own_text",
    "parse_descriptors",
    "parse_manager",
    "parse_worker",
    "response_schema",
    "strip_reasoning",
]
