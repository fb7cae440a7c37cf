"""Pure parts of the TUI: graph/matrix drawing, stream unescaping and wrapping, the event model."""

from __future__ import annotations

import numpy as np
import pytest

from core.routing.dytopo import route_from_similarity
from core.runtime import events as ev
from tests.support.render import drawn_edges
from tui.model import RunModel
from tui.streamtext import JsonUnescaper
from tui.widgets.graph_render import GraphOptions, GraphStyles, plain, render_graph, render_matrix
from tui.widgets.stream_view import wrap_line

FIVE = ["Manager", "Designer", "Developer", "Researcher", "Tester"]
EIGHT = ["Analyst", "Critic", "Synthesizer", "Developer", "Researcher", "Tester", "Designer", "Verifier"]


def routing_for(names: list[str], seed: int, tau: float = 0.3, k_in: int = 3):  # type: ignore[no-untyped-def]
    sim = np.random.default_rng(seed).uniform(0.0, 0.85, (len(names), len(names)))
    return route_from_similarity(names, sim, tau, k_in)


@pytest.mark.parametrize(("names", "width", "height"), [(FIVE, 120, 40), (EIGHT, 200, 60), (FIVE, 54, 12)])
def test_graph_draws_every_node_and_kept_edge_with_its_score(names: list[str], width: int, height: int) -> None:
    routing = routing_for(names, seed=len(names))
    lines = render_graph(routing, width, GraphOptions(height=height))
    text = plain(lines)
    run_order = [name for tier in routing.tiers for name in tier]  # tier by tier: how they run
    for position, name in enumerate(run_order, start=1):
        assert f"[{position} {name}]" in text
    for index, tier in enumerate(routing.tiers):
        tier_line = next(line for line in text.splitlines() if line.startswith(f"T{index} "))
        assert all(name in tier_line or any(name in x for x in text.splitlines()) for name in tier)
    assert drawn_edges(text) == {(e.src, e.dst, f"{e.score:.2f}") for e in routing.edges}
    assert all(line.cell_len <= width for line in lines)
    assert f"tau {routing.tau:.2f}" in text and f"k_in {routing.k_in}" in text
    assert f"{len(routing.edges)}/{routing.possible_edges} edges kept" in text


def test_removed_edges_hidden_until_asked_then_dimmed_with_reason() -> None:
    routing = routing_for(FIVE, seed=5, tau=0.2, k_in=1)
    assert routing.removed
    hidden = plain(render_graph(routing, 120))
    assert "(k_in)" not in hidden and "(cycle)" not in hidden
    assert f"{len(routing.removed)} removed edge(s) hidden" in hidden
    styles = GraphStyles(removed="dim red")
    lines = render_graph(routing, 120, GraphOptions(show_removed=True, styles=styles))
    shown = plain(lines)
    for r in routing.removed:
        line = next(x for x in lines if f"{r.src.rjust(10)} ┄{r.score:.2f}┄▷ {r.dst}  ({r.reason})" in x.plain)
        assert line.style == "dim red"
    assert "removed" in shown.splitlines()[0]


def test_matrix_highlights_cells_at_or_above_tau_and_marks_kept_edges() -> None:
    routing = routing_for(FIVE, seed=7)
    hit = "bold black on green"
    lines = render_matrix(routing, 120, GraphOptions(styles=GraphStyles(hit=hit)))
    rows = lines[-len(FIVE):]
    kept = {(e.src, e.dst) for e in routing.edges}
    for i, row in enumerate(rows):
        for j in range(len(FIVE)):
            if i == j:
                continue
            score = routing.similarity[i][j]
            text = f"{score:.2f}" + ("*" if (FIVE[j], FIVE[i]) in kept else "")
            start = row.plain.index(text, row.plain.index(" ") if j else 0)
            spans = [s for s in row.spans if s.start <= start < s.end]
            assert (spans[-1].style == hit) == (score >= routing.tau), (FIVE[i], FIVE[j], score)


def test_unescaper_handles_escapes_split_across_chunks() -> None:
    raw = '{"public": "line one\\nline \\"two\\"\\tend \\u00e9"}'
    for size in (1, 2, 3, 7):
        un = JsonUnescaper()
        out = "".join(un.feed(raw[i : i + size]) for i in range(0, len(raw), size))
        assert out == '{"public": "line one\nline "two"    end é"}'


def test_wrap_line_breaks_at_spaces_and_splits_long_words() -> None:
    assert wrap_line("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]
    assert wrap_line("x" * 10, 4) == ["xxxx", "xxxx", "xx"]
    assert all(len(row) <= 9 for row in wrap_line("the quick brown fox jumps over the lazy dog", 9))


def _start(model: RunModel) -> None:
    model.apply(ev.RunStarted(run_id="r", problem="p", domain="code", manager="Manager",
                              workers=FIVE[1:], roles={}, protocol="phased", strategy="dytopo", model="m",
                              base_url="u", demo=True, params={"tau": 0.3, "k_in": 3, "max_rounds": 5}))


def test_model_tracks_goals_badges_tokens_and_preview() -> None:
    model = RunModel()
    _start(model)
    model.apply(ev.RoundStarted(round=1, params=model.params))
    model.apply(ev.ManagerDecided(round=1, terminate=False, next_goal="draft it", reasoning="", plan=True))
    model.apply(ev.AgentStarted(round=1, agent="Tester", call="work"))
    model.apply(ev.AgentDelta(round=1, agent="Tester", call="work", text='{"public": "a\\nb'))
    assert model.rounds[1].agents["Tester"].text == "a\nb"  # the public field's text, not the JSON around it
    assert model.rounds[1].agents["Tester"].status == "working"
    model.apply(ev.AgentFinished(round=1, agent="Tester", call="work", status="done", public="ok",
                                 prompt_tokens=10, completion_tokens=5))
    assert model.tokens == 15 and model.rounds[1].agents["Tester"].status == "done"
    model.apply(ev.ManagerDecided(round=1, terminate=False, next_goal="fix it", reasoning="go on"))
    model.apply(ev.RoundStarted(round=2, params=model.params))
    assert model.rounds[1].goal == "draft it" and model.rounds[2].goal == "fix it"
    routing = routing_for(FIVE[1:], seed=3)
    model.apply(ev.TopologyBuilt(round=2, routing=routing.to_dict(), query_embeddings=[], key_embeddings=[]))
    assert model.preview is None
    model.apply(ev.ParamsChanged(round=2, params={"tau": 0.5, "k_in": 1, "max_rounds": 5}, changed=["tau", "k_in"]))
    expected = route_from_similarity(routing.names, routing.similarity, 0.5, 1)
    assert model.preview == expected
    assert model.edges_per_round() == [0, len(routing.edges)]


@pytest.mark.parametrize(("n", "width"), [(12, 46), (16, 46), (20, 46), (20, 76)])
def test_a_large_teams_matrix_is_a_map_that_fits_and_marks_exactly_the_kept_edges(n: int, width: int) -> None:
    names = [f"Expert{i:02d}" for i in range(n)]
    routing = routing_for(names, seed=n, tau=0.6, k_in=2)
    lines = [line.plain for line in render_matrix(routing, width)]
    assert all(len(line) <= width for line in lines)
    rows = lines[-n:]  # one per agent, numbered, its name as far as it fits
    assert [int(row.split()[0]) for row in rows] == list(range(1, n + 1))
    kept = {(e.src, e.dst) for e in routing.edges}
    for i, row in enumerate(rows):
        cells = row[len(row) - 2 * n + 1 :: 2]  # a space and a mark per agent, at the end of the row
        assert len(cells) == n and cells[i] == "·"
        for j, mark in enumerate(cells):
            if j == i:
                continue
            score = routing.similarity[i][j]
            assert (mark == "●") == ((names[j], names[i]) in kept)
            assert (mark == "○") == (score >= routing.tau and (names[j], names[i]) not in kept)
            assert mark in "●○" or mark in " ░▒▓"
