"""core.runtime.textsafe: the one function that makes model and file text safe to show on a terminal."""

from __future__ import annotations

import json

from core.runtime import events as ev
from core.runtime.textsafe import json_safe, printable, printable_fields

HOSTILE = "a\x1b]0;pwned\x07b\x1b[2Jc\x1b]52;c;cHduZWQ=\x07d\x9b31me\x9d0;x\x9cf\x7fg\x00h"


def _controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


def test_every_control_is_replaced_by_a_visible_stand_in() -> None:
    out = printable(HOSTILE)
    assert _controls(out) == []
    assert out == "a␛]0;pwned␇b␛[2Jc␛]52;c;cHduZWQ=␇d␛[31me␛]0;x␛\\f␡g␀h"


def test_newlines_tabs_and_ordinary_text_are_kept() -> None:
    text = "line one\n\tindented — ünïcödé 数学 ✓\nend"
    assert printable(text) is text
    assert printable("a\r\nb\rc") == "a\nb␍c"  # Windows line ends kept as lines; a lone CR shown


def test_pieces_of_a_stream_are_safe_one_by_one() -> None:
    pieces = [HOSTILE[i : i + 3] for i in range(0, len(HOSTILE), 3)]
    assert "".join(printable(p) for p in pieces).replace("\n", "") == printable(HOSTILE)


def test_json_safe_escapes_what_json_dumps_leaves_raw_and_keeps_the_value() -> None:
    text = json.dumps({"public": HOSTILE + "\u2028"}, ensure_ascii=False)
    assert "\x9b" in text  # json.dumps keeps C1 raw
    safe = json_safe(text)
    assert _controls(safe) == [] and "\u2028" not in safe
    assert json.loads(safe) == json.loads(text)


def test_printable_fields_copies_an_event_and_leaves_the_original_alone() -> None:
    finished = ev.AgentFinished(round=1, agent="Tester", call="work", status="done", public=HOSTILE,
                                private={"Developer\x1b": "note \x9b"}, query="q")
    safe = printable_fields(finished)
    assert safe is not finished and safe.public == printable(HOSTILE)
    assert safe.private == {"Developer␛": "note ␛["} and safe.query == "q" and safe.ts == finished.ts
    assert finished.public == HOSTILE  # the recorder keeps the raw text
    clean = ev.Notice(round=1, severity="info", message="fine")
    assert printable_fields(clean) is clean
