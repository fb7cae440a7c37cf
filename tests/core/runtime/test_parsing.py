"""Parsing model replies: the wrappings real models produce, the paper's field spellings, and the
rule that a bad reply only ever raises ParseError with a one-line reason (fed back in a re-ask)."""

from __future__ import annotations

import json
import random
import string

import pytest

from core.runtime.parsing import (
    DescriptorOutput,
    ManagerOutput,
    ParseError,
    WorkerOutput,
    extract_json_object,
    parse_descriptors,
    parse_manager,
    parse_worker,
    strip_reasoning,
)

WORKER = {
    "public": "def make_palindrome(s):\n    return s + s[::-1]",
    "private": {"Tester": "check the empty string"},
    "query": "I need test cases for make_palindrome.",
    "key": "I provide an implementation of make_palindrome.",
}
WORKER_JSON = json.dumps(WORKER)
EXPECTED_WORKER = WorkerOutput(
    public=WORKER["public"],
    private={"Tester": "check the empty string"},
    query=WORKER["query"],
    key=WORKER["key"],
)


# --- wrappings -------------------------------------------------------------------------------------


def test_plain_json() -> None:
    assert parse_worker(WORKER_JSON) == EXPECTED_WORKER


@pytest.mark.parametrize(
    "reply",
    [
        f"```json\n{WORKER_JSON}\n```",
        f"```\n{WORKER_JSON}\n```",
        f"Here is my answer:\n```json\n{WORKER_JSON}\n```\nHope this helps!",
        f"Sure! Here it is: {WORKER_JSON} Let me know if you need more.",
        f"<think>The Tester needs {{cases}}. I'll write the code.</think>\n{WORKER_JSON}",
        f"<think>\nplan\n</think>\n\n```json\n{WORKER_JSON}\n```",
        f"I should write code first.\n</think>\n{WORKER_JSON}",  # opening tag was in the template
        f"<THINK>shouting</THINK>{WORKER_JSON}",
    ],
    ids=["fenced", "fenced-bare", "fence-prose", "prose", "think", "think-fence", "orphan-close", "caps"],
)
def test_wrappings_are_removed(reply: str) -> None:
    assert parse_worker(reply) == EXPECTED_WORKER


def test_strip_reasoning() -> None:
    assert strip_reasoning("<think>a</think>B<think>c</think>D") == "BD"
    assert strip_reasoning("<think>still going when tokens ran out") == ""
    assert strip_reasoning("done thinking</think> answer") == "answer"
    assert strip_reasoning("no tags at all") == "no tags at all"


def test_unclosed_think_with_no_json_says_so() -> None:
    with pytest.raises(ParseError, match="think"):
        parse_worker("<think>I am still reasoning about the problem and then tokens ran out")


def test_unclosed_think_that_holds_the_json_still_parses() -> None:
    assert parse_worker(f"<think>ok, replying now {WORKER_JSON}") == EXPECTED_WORKER


def test_braces_in_prose_and_strings_do_not_confuse_the_object_search() -> None:
    reply = 'For the set {1, 2} I say: {"public": "use {} and }{ freely", "query": "q", "key": "k"}'
    out = parse_worker(reply)
    assert out.public == "use {} and }{ freely"


CODE_WITH_FENCE = '```python\ndef counts(s):\n    return {"a": s.count("a")}\n```'


@pytest.mark.parametrize("fenced", [False, True])
def test_code_fences_inside_a_json_string_are_kept_whole(fenced: bool) -> None:
    # A Developer's public content is often Markdown with a fenced code block holding a dict literal.
    reply = json.dumps({"public": CODE_WITH_FENCE, "query": "q", "key": "k"})
    if fenced:
        reply = f"```json\n{reply}\n```"
    assert parse_worker(reply).public == CODE_WITH_FENCE


def test_an_example_object_in_the_prose_does_not_win() -> None:
    reply = f'The format is {{"query": "..."}}. My reply:\n{WORKER_JSON}'
    assert parse_worker(reply) == EXPECTED_WORKER


def test_raw_newlines_inside_strings_are_accepted() -> None:
    reply = '{"public": "line one\nline two", "query": "q", "key": "k"}'
    assert parse_worker(reply).public == "line one\nline two"


# --- repair ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        '{"public": "p", "query": "q", "key": "k",}',
        "{'public': 'p', 'query': 'q', 'key': 'k'}",
        '{"public": "p" "query": "q", "key": "k"}',
        '```json\n{"public": "p", "query": "q", "key": "k"',  # truncated: no closing brace or fence
    ],
    ids=["trailing-comma", "single-quotes", "missing-comma", "truncated"],
)
def test_broken_json_is_repaired(reply: str) -> None:
    out = parse_worker(reply)
    assert (out.public, out.query, out.key) == ("p", "q", "k")


def test_python_booleans_are_repaired() -> None:
    out = parse_manager('{"terminate": True, "reasoning": "tests pass", "final_answer": "x = 1"}')
    assert out.terminate is True
    assert out.final_answer == "x = 1"


def test_extract_json_object_returns_the_object() -> None:
    found = extract_json_object('noise {"a": [1, 2], "b": {"c": null}} noise')
    assert found == {"a": [1, 2], "b": {"c": None}}


# --- field spellings and coercion --------------------------------------------------------------------


def test_paper_worker_spellings() -> None:
    reply = json.dumps(
        {
            "public content": "p",
            "private content": {"Tester": "t"},
            "q vector": "what I need",
            "k vector": "what I give",
        }
    )
    assert parse_worker(reply) == WorkerOutput("p", {"Tester": "t"}, "what I need", "what I give")


@pytest.mark.parametrize(
    ("query_name", "key_name"),
    [
        ("q desc", "k desc"),
        ("q_desc", "k_desc"),
        ("query descriptor", "key descriptor"),
        ("Q_Vector", "K-Vector"),
        ("qVector", "kVector"),
        ("QUERY", "Key"),
    ],
)
def test_descriptor_spellings(query_name: str, key_name: str) -> None:
    reply = json.dumps({query_name: "need", key_name: "offer"})
    assert parse_descriptors(reply) == DescriptorOutput(query="need", key="offer")


def test_public_content_underscore_and_our_name_wins_over_paper_name() -> None:
    out = parse_worker(json.dumps({"public_content": "paper", "public": "ours", "query": "q", "key": "k"}))
    assert out.public == "ours"
    out = parse_worker(json.dumps({"Public_Content": "paper", "query": "q", "key": "k"}))
    assert out.public == "paper"


def test_private_forms() -> None:
    base = {"public": "p", "query": "q", "key": "k"}
    assert parse_worker(json.dumps(base)).private == {}
    assert parse_worker(json.dumps({**base, "private": None})).private == {}
    assert parse_worker(json.dumps({**base, "private": "for everyone"})).private == {"all": "for everyone"}
    assert parse_worker(json.dumps({**base, "private": ""})).private == {}
    coerced = parse_worker(json.dumps({**base, "private": {"Tester": ["a", 1], "Designer": 3, "Dev": None}}))
    assert coerced.private == {"Tester": '["a", 1]', "Designer": "3"}


def test_non_string_public_is_json_text() -> None:
    out = parse_worker(json.dumps({"public": {"code": "x = 1", "tests": [1, 2]}, "query": "q", "key": "k"}))
    assert json.loads(out.public) == {"code": "x = 1", "tests": [1, 2]}
    out = parse_worker(json.dumps({"public": ["step 1", "step 2"], "query": "q", "key": "k"}))
    assert json.loads(out.public) == ["step 1", "step 2"]


def test_worker_answer_field() -> None:
    assert parse_worker(json.dumps({**WORKER, "answer": "42"})).answer == "42"
    assert parse_worker(json.dumps({**WORKER, "answer": 42})).answer == "42"
    assert parse_worker(WORKER_JSON).answer == ""


def test_descriptors_accept_a_full_work_reply() -> None:
    assert parse_descriptors(WORKER_JSON) == DescriptorOutput(WORKER["query"], WORKER["key"])


# --- manager -----------------------------------------------------------------------------------------


def test_manager_ours() -> None:
    reply = json.dumps({"goal": "write tests", "terminate": False, "reasoning": "none", "final_answer": ""})
    assert parse_manager(reply) == ManagerOutput("write tests", False, "none", "")


def test_manager_paper_spellings() -> None:
    reply = json.dumps(
        {
            "public content": "Code exists and tests pass.",
            "private content": {},
            "q desc": "nothing",
            "k desc": "status",
            "is complete": True,
            "next goal": "",
        }
    )
    out = parse_manager(reply)
    assert out.terminate is True
    assert out.goal == ""
    assert out.reasoning == "Code exists and tests pass."
    assert out.final_answer == ""


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("False", False), ("TRUE", True), ("yes", True), ("no", False), (1, True), (0, False)],
)
def test_terminate_from_strings_and_numbers(raw: object, expected: bool) -> None:
    out = parse_manager(json.dumps({"is_complete": raw, "next_goal": "keep going"}))
    assert out.terminate is expected


def test_manager_goal_may_be_missing_only_when_terminating() -> None:
    assert parse_manager('{"terminate": true, "final_answer": "done"}').goal == ""
    with pytest.raises(ParseError, match="goal"):
        parse_manager('{"terminate": false, "reasoning": "more work"}')


def test_manager_bad_terminate_value() -> None:
    with pytest.raises(ParseError, match=r"terminate.*maybe"):
        parse_manager('{"terminate": "maybe", "goal": "g"}')


# --- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parse", "reply", "field"),
    [
        (parse_worker, '{"query": "q", "key": "k"}', "public"),
        (parse_worker, '{"public": "p", "key": "k"}', "query"),
        (parse_worker, '{"public": "p", "query": "q"}', "key"),
        (parse_worker, '{"public": "  ", "query": "q", "key": "k"}', "public"),
        (parse_worker, '{"public": null, "query": "q", "key": "k"}', "public"),
        (parse_descriptors, '{"key": "k"}', "query"),
        (parse_descriptors, '{"query": "q", "key": ""}', "key"),
        (parse_manager, '{"goal": "g"}', "terminate"),
    ],
)
def test_missing_or_empty_field_names_the_field(parse, reply: str, field: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError) as info:
        parse(reply)
    message = str(info.value)
    assert repr(field) in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "reply",
    ["", "   ", "I cannot help.", "[1, 2, 3]", "42", '"just a string"', "{{{{", "}", "<think></think>"],
)
@pytest.mark.parametrize("parse", [parse_worker, parse_descriptors, parse_manager])
def test_garbage_raises_parse_error_with_one_line(parse, reply: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError) as info:
        parse(reply)
    assert str(info.value)
    assert "\n" not in str(info.value)


def test_parse_error_is_a_value_error() -> None:
    assert issubclass(ParseError, ValueError)


def test_deeply_nested_json_is_a_parse_error_not_a_recursion_error() -> None:
    with pytest.raises(ParseError):
        parse_worker("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ParseError):
        parse_worker('{"a":' * 50_000 + "1" + "}" * 50_000)


def test_non_text_input_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_worker(None)  # type: ignore[arg-type]


# --- fuzz: only ParseError ever escapes ------------------------------------------------------------

_PIECES = [
    "{", "}", "[", "]", '"', "'", ":", ",", "\\", "\n", "```", "```json", "<think>", "</think>",
    "true", "null", "public", "query", "key", "private", "terminate", "goal", "is complete",
    "q vector", "1e999", "NaN", "-", "\u00e9", "\x00", " ",
]  # fmt: skip


def _check_only_parse_error(text: str) -> None:
    for parse in (parse_worker, parse_descriptors, parse_manager, extract_json_object):
        try:
            parse(text)
        except ParseError as exc:
            assert "\n" not in str(exc)


def test_seeded_fuzz_only_raises_parse_error() -> None:
    # Runs without extra packages; the hypothesis test below explores more when it is installed.
    rng = random.Random(20240517)
    alphabet = string.printable
    for _ in range(400):
        if rng.random() < 0.5:
            text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 40)))
        else:
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 200)))
        _check_only_parse_error(text)


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is a dev extra
    pass
else:
    _tokens = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=8)), max_size=40).map("".join)

    @settings(max_examples=300, deadline=None)
    @given(st.one_of(st.text(), _tokens))
    def test_hypothesis_only_raises_parse_error(text: str) -> None:
        _check_only_parse_error(text)

    _json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
        max_leaves=12,
    )

    @settings(max_examples=300, deadline=None)
    @given(st.dictionaries(st.sampled_from([*_PIECES, "public content", "answer"]), _json_values, max_size=6))
    def test_hypothesis_any_json_object_parses_or_raises_parse_error(data: dict[str, object]) -> None:
        _check_only_parse_error(json.dumps(data))
