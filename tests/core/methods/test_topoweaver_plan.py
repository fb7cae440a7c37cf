"""TopoWeaver-R1's plans as data: finding the YAML, the four validation tags in the paper's order with
the rule that failed, the density figures against the paper's formulas, the graph a plan draws."""

from __future__ import annotations

import math

import pytest

from core.methods.topoweaver.plan import (
    TAG_LOGIC,
    TAG_NO_YAML,
    TAG_PARSE,
    TAG_SCHEMA,
    TAG_VALID,
    WARN_CAP,
    WARN_CONCISE,
    WARN_DIFFICULTY,
    Plan,
    PlanAgent,
    density,
    extract_yaml,
    fallback_plan,
    paper_status,
    plan_routing,
    plan_yaml,
    validate_plan,
)
from core.routing.dytopo import KIND_CROSS, KIND_REF


def fenced(body: str, lead: str = "") -> str:
    return f"{lead}```yaml\n{body.strip()}\n```\n"


GOOD = """
difficulty: interview
steps:
  - step: 1
    agents:
      - {id: planner_1, type: planner, ref: []}
      - {id: searcher_1, type: searcher, ref: []}
  - step: 2
    agents:
      - {id: coder_1, type: coder, ref: [planner_1, searcher_1]}
  - step: 3
    agents:
      - {id: tester_1, type: tester, ref: [coder_1]}
"""


def plan_of(difficulty: str, *layers: list[tuple[str, str, list[str]]]) -> Plan:
    steps = [[PlanAgent(i, t, tuple(r), n) for i, t, r in layer] for n, layer in enumerate(layers, start=1)]
    return Plan(difficulty, steps)


# --- finding the YAML ---------------------------------------------------------------------------------


def test_a_yaml_fence_anywhere_in_the_reply_is_the_plan() -> None:
    reply = "<think>steps: maybe three?</think>\nHere is my plan:\n" + fenced(GOOD) + "Good luck, team."
    found = extract_yaml(reply)
    assert found is not None and found.startswith("difficulty: interview") and "Good luck" not in found
    assert "maybe three" not in found


def test_bare_yaml_as_the_prompt_asks_is_found_and_prose_is_not() -> None:
    assert extract_yaml("Sure.\n" + GOOD.strip()) == GOOD.strip()
    assert extract_yaml("I think we should use a planner and a coder, then test it.") is None
    assert extract_yaml("```python\nprint('hi')\n```") is None


def test_other_layouts_are_accepted() -> None:
    listed = """
- step: 1
  agents: [{id: coder_1, type: coder, ref: []}]
- step: 2
  agents: [{id: tester_1, type: tester, ref: [coder_1]}]
"""
    keyed = """
difficulty: easy
step_1: [{id: coder_1, type: coder}]
step_2: [{id: tester_1, type: tester, ref: coder_1}]
"""
    a = validate_plan(fenced(listed))
    b = validate_plan(fenced(keyed))
    assert a.valid and a.plan is not None and a.plan.difficulty == "interview"
    assert any(w.startswith(WARN_DIFFICULTY) for w in a.warnings)  # no difficulty: interview assumed, said so
    assert b.valid and b.plan is not None and b.plan.difficulty == "introductory"
    assert b.plan.shape() == "[coder_1] → [tester_1]" and b.plan.agents[1].ref == ("coder_1",)


# --- the four tags, in the paper's order --------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "tag", "rule", "fragment"),
    [
        ("I would use a planner, a coder and a tester.", TAG_NO_YAML, "found", "no YAML block"),
        (fenced("difficulty: interview\nsteps: [ {id: coder_1"), TAG_PARSE, "parse", "line"),
        (fenced("difficulty: interview\nsteps:\n  - agents:\n      - id: a\n    bad: ["), TAG_PARSE, "parse", ""),
        (fenced("just a sentence"), TAG_SCHEMA, "schema", "not a plan"),
        (fenced("difficulty: interview\nsteps: []"), TAG_SCHEMA, "schema", "no steps"),
        (fenced("difficulty: impossible\nsteps: [[{id: c, type: coder}]]"), TAG_SCHEMA, "schema", "difficulty"),
        (fenced(GOOD.replace("type: searcher", "type: reviewer")), TAG_SCHEMA, "schema", "reviewer"),
        (fenced(GOOD.replace("id: coder_1,", "id: 7,")), TAG_SCHEMA, "schema", "id must be text"),
        (fenced(GOOD.replace("id: planner_1", "id: orchestrator")), TAG_SCHEMA, "schema", "reserved"),
        (fenced(GOOD.replace("ref: [coder_1]", "ref: {a: 1}")), TAG_SCHEMA, "schema", "ref must be a list"),
    ],
)
def test_each_failure_gives_its_tag_and_rule(reply: str, tag: str, rule: str, fragment: str) -> None:
    v = validate_plan(reply)
    assert (v.tag, v.rule) == (tag, rule)
    assert v.plan is None and not v.valid
    assert fragment in v.message


def test_a_ref_to_a_later_step_is_a_logic_error_naming_the_agent_and_the_ref() -> None:
    plan = GOOD.replace("{id: planner_1, type: planner, ref: []}", "{id: planner_1, type: planner, ref: []}\n"
                        "      - {id: helper_1, type: searcher, ref: []}")
    plan = plan.replace("ref: [planner_1, searcher_1]", "ref: [planner_1, tester_1]")
    v = validate_plan(fenced(plan))
    assert (v.tag, v.rule) == (TAG_LOGIC, "L2")
    assert "coder_1 (step 2) refs tester_1 in a later step (3)" in v.message
    assert v.offender == "coder_1→tester_1"
    assert v.badge().startswith("[YAML_LOGIC_INVALID] L2: coder_1")


def test_a_plan_without_a_tester_last_is_a_logic_error() -> None:
    no_tester = GOOD.replace("{id: tester_1, type: tester, ref: [coder_1]}",
                             "{id: coder_2, type: coder, ref: [coder_1]}")
    v = validate_plan(fenced(no_tester))
    assert (v.tag, v.rule) == (TAG_LOGIC, "L3")
    assert "no tester" in v.message and v.offender == "coder_2"


@pytest.mark.parametrize(
    ("edit", "rule", "fragment"),
    [
        (("{id: searcher_1, type: searcher, ref: []}", "{id: searcher_1, type: searcher, ref: [planner_1]}"), "L1",
         "first step"),
        (("ref: [planner_1, searcher_1]", "ref: [planner_1, nobody_9]"), "L2", "not in the plan"),
        (("ref: [planner_1, searcher_1]", "ref: [planner_1, coder_1]"), "L8", "refs itself"),
        (("id: searcher_1", "id: planner_1"), "L8", "used twice"),
        (("ref: [coder_1]}", "ref: [planner_1]}"), "L4", "refs no coder or debugger"),
        (("{id: coder_1, type: coder", "{id: coder_1, type: debugger"), "L5", "before any coder"),
    ],
)
def test_every_logic_rule_is_checked(edit: tuple[str, str], rule: str, fragment: str) -> None:
    v = validate_plan(fenced(GOOD.replace(*edit)))
    assert v.tag == TAG_LOGIC and v.rule == rule and fragment in v.message


def test_a_debugger_after_a_coder_is_fine_and_cross_turn_refs_are_checked() -> None:
    body = """
difficulty: interview
steps:
  - step: 1
    agents: [{id: coder_1, type: coder, ref: []}]
  - step: 2
    agents: [{id: debugger_1, type: debugger, ref: [coder_1, tester_1@1]}]
  - step: 3
    agents: [{id: tester_1, type: tester, ref: [debugger_1]}]
"""
    ok = validate_plan(fenced(body), turn=2, earlier={1: ["coder_1", "tester_1"]})
    assert ok.valid and ok.plan is not None
    assert ok.plan.agent("debugger_1").cross_refs == [("tester_1", 1)]  # type: ignore[union-attr]
    unknown = validate_plan(fenced(body), turn=2, earlier={1: ["coder_1"]})
    assert unknown.rule == "L2" and "no agent tester_1 ran in turn 1" in unknown.message
    future = validate_plan(fenced(body), turn=1, earlier={})
    assert future.rule == "L2" and "only earlier turns" in future.message


def test_the_cap_and_conciseness_are_warnings_not_failures() -> None:
    crowded = """
difficulty: introductory
steps:
  - step: 1
    agents:
      - {id: planner_1, type: planner, ref: []}
      - {id: searcher_1, type: searcher, ref: []}
      - {id: algorithmmer_1, type: algorithm_designer, ref: []}
  - step: 2
    agents: [{id: coder_1, type: coder, ref: [planner_1, searcher_1]}]
  - step: 3
    agents: [{id: tester_1, type: tester, ref: [coder_1]}]
"""
    v = validate_plan(fenced(crowded))
    assert v.tag == TAG_VALID and v.plan is not None
    assert v.plan.agent("algorithmmer_1").type == "algorithmmer"  # type: ignore[union-attr]
    assert any(w.startswith(f"{WARN_CAP} L6: |V| = 5 > N_max(introductory) = 4") for w in v.warnings)
    assert any(w.startswith(WARN_CONCISE) and "algorithmmer_1" in w for w in v.warnings)


def test_a_hostile_plan_is_bounded() -> None:
    many = "difficulty: competition\nsteps:\n" + "".join(
        f"  - [{{id: c{i}, type: coder}}]\n" for i in range(25)
    )
    v = validate_plan(fenced(many))
    assert v.tag == TAG_SCHEMA and "more than 20 agents" in v.message
    bomb = "a: &a [1, 2]\nb: &b [*a, *a, *a]\nc: &c [*b, *b, *b]\nsteps: *c"
    assert validate_plan(fenced(bomb)).tag == TAG_SCHEMA
    assert validate_plan(fenced("steps: !!python/object/apply:os.system ['true']")).tag == TAG_PARSE
    assert validate_plan("```yaml\n" + "x" * 30_000 + "\n```").tag == TAG_PARSE


def test_non_code_domains_use_their_own_pool_and_closer() -> None:
    body = """
difficulty: interview
steps:
  - step: 1
    agents: [{id: planner_1, type: planner, ref: []}]
  - step: 2
    agents: [{id: thinker_1, type: thinker, ref: [planner_1]}]
  - step: 3
    agents: [{id: verifier_1, type: verifier, ref: [thinker_1]}]
"""
    assert validate_plan(fenced(body), domain="math").valid
    assert validate_plan(fenced(body), domain="code").tag == TAG_SCHEMA  # no thinker among the code roles
    no_check = body.replace("type: verifier, ref: [thinker_1]", "type: verifier, ref: [planner_1]")
    v = validate_plan(fenced(no_check), domain="general")
    assert v.rule == "L4" and "refs no thinker" in v.message


# --- density: the paper's formulas by hand --------------------------------------------------------------


def test_density_of_a_chain_matches_eqs_4_to_7_19_21() -> None:
    d = density(plan_of("introductory", [("planner_1", "planner", [])], [("coder_1", "coder", ["planner_1"])],
                        [("tester_1", "tester", ["coder_1"])]))
    nodes, edges, steps, n_max = 3, 2, 3, 4
    s_node = math.exp(-nodes / n_max)  # eq. 6
    s_edge = math.exp(-edges / (nodes * (nodes - 0.5)))
    s_depth = 1 - steps / nodes
    s_complex = math.exp(0.5 * s_node + 1.0 * s_edge + 0.5 * s_depth)  # eq. 7, alpha 1, lambdas 0.5:1:0.5
    assert (d.nodes, d.edges, d.steps, d.n_max) == (nodes, edges, steps, n_max)
    assert d.s_node == pytest.approx(s_node) and d.s_edge == pytest.approx(s_edge) and d.s_depth == 0.0
    assert d.s_complex == pytest.approx(s_complex) and d.s_complex == pytest.approx(2.72, abs=0.01)
    assert d.r_g == pytest.approx(s_complex) and d.within_cap  # eq. 14 within the cap
    assert d.cost == pytest.approx(1 + 3 + 2 * 2 / 3)  # eq. 19
    assert d.raw == pytest.approx(3 + 2 * 2 / 3 + 3)  # eq. 21


def test_density_of_a_wide_plan_and_over_the_cap() -> None:
    wide = plan_of(
        "interview",
        [("planner_1", "planner", []), ("searcher_1", "searcher", []), ("algorithmmer_1", "algorithmmer", [])],
        [("coder_1", "coder", ["planner_1", "searcher_1", "algorithmmer_1"]), ("coder_2", "coder", ["planner_1"])],
        [("tester_1", "tester", ["coder_1", "coder_2"])],
    )
    d = density(wide)
    assert (d.nodes, d.edges, d.steps, d.n_max) == (6, 6, 3, 7)
    expected = math.exp(0.5 * math.exp(-6 / 7) + math.exp(-6 / (6 * 5.5)) + 0.5 * (1 - 3 / 6))
    assert d.s_complex == pytest.approx(expected)
    over = density(Plan("introductory", wide.steps))  # the same graph, rated easy: N_max 4 < |V| 6
    assert not over.within_cap and over.r_g == pytest.approx(math.tanh((4 - 6) / 4))  # eq. 14 beyond the cap
    assert over.to_dict()["alpha"] == 1.0 and over.to_dict()["S_complex"] == round(over.s_complex, 4)


def test_sparser_plans_score_higher() -> None:
    chain = density(plan_of("interview", [("coder_1", "coder", [])], [("tester_1", "tester", ["coder_1"])]))
    dense = density(plan_of(
        "interview",
        [("planner_1", "planner", []), ("searcher_1", "searcher", [])],
        [("coder_1", "coder", ["planner_1", "searcher_1"]), ("coder_2", "coder", ["planner_1", "searcher_1"])],
        [("tester_1", "tester", ["coder_1", "coder_2", "planner_1", "searcher_1"])],
    ))
    assert chain.edges / chain.nodes < dense.edges / dense.nodes and dense.s_edge < chain.s_edge


# --- the graph, the fallback, the statuses ---------------------------------------------------------------


def test_a_plan_draws_layers_ref_edges_and_dashed_earlier_turn_edges() -> None:
    v = validate_plan(fenced(GOOD))
    assert v.plan is not None
    routing = plan_routing(v.plan, {"coder_1": 1})
    assert routing.tiers == [["planner_1", "searcher_1"], ["coder_1"], ["tester_1"]]
    assert routing.order == ["planner_1", "searcher_1", "coder_1", "tester_1"]
    assert routing.inactive == ["coder_1@1"] and routing.names[0] == "coder_1@1"
    kinds = {(e.src, e.dst): e.kind for e in routing.edges}
    assert kinds == {
        ("planner_1", "coder_1"): KIND_REF,
        ("searcher_1", "coder_1"): KIND_REF,
        ("coder_1", "tester_1"): KIND_REF,
        ("coder_1@1", "coder_1"): KIND_CROSS,
    }
    i = routing.names.index
    assert routing.similarity[i("coder_1")][i("planner_1")] == 1.0  # the consumer's row, the provider's column
    assert routing.similarity[i("planner_1")][i("coder_1")] == 0.0
    assert routing.k_in == 3 and routing.acyclic


@pytest.mark.parametrize("domain", ["code", "math"])
@pytest.mark.parametrize("difficulty", ["introductory", "interview", "competition"])
def test_every_fallback_template_is_a_valid_plan_within_its_cap(domain: str, difficulty: str) -> None:
    for retry in (False, True):
        plan = fallback_plan(domain, difficulty, retry=retry)
        v = validate_plan(fenced(plan_yaml(plan)), domain=domain, turn=2, earlier={1: []})
        assert v.valid, v.message
        assert density(plan).within_cap


def test_syntax_error_is_the_papers_compile_error() -> None:
    assert paper_status("SYNTAX_ERROR") == "COMPILE_ERROR"
    assert paper_status("WRONG_ANSWER") == "WRONG_ANSWER"
