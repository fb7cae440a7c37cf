"""Every key of the run and replay screens, with an id (for the keymap) and a tooltip.

The help screen and the command palette read these lists, so a key is described in one place.
"""

from __future__ import annotations

from textual.binding import Binding

RUN_BINDINGS: list[Binding] = [
    Binding("n", "step_phase", "phase", id="step_phase", tooltip="Run one phase, then wait (step mode)"),
    Binding("N", "step_round", "round", id="step_round", tooltip="Run until the next round starts, then wait"),
    Binding("space", "toggle_pause", "pause", key_display="spc", id="pause",
            tooltip="Pause at the next phase boundary, or resume auto-run"),
    Binding("a", "auto_run", "auto", id="auto_run", tooltip="Auto-run: stop waiting between phases"),
    Binding("t", "tau(0.05)", "tau+", id="tau_up",
            tooltip="Raise tau by 0.05 (fewer edges); the graph redraws at once"),
    Binding("T", "tau(-0.05)", "tau-", id="tau_down", tooltip="Lower tau by 0.05 (more edges)"),
    Binding("k", "k_in(1)", "k_in+", id="k_in_up", tooltip="Allow one more inbound edge per agent"),
    Binding("K", "k_in(-1)", "k_in-", id="k_in_down", tooltip="Allow one fewer inbound edge per agent"),
    Binding("r", "reroute", "reroute", id="reroute",
            tooltip="Rebuild the current round's graph with the new tau/k_in now (before its work phase)"),
    Binding("comma", "browse(-1)", "◀rnd", id="prev_round",
            tooltip="Look back: the previous round's graph, outputs and goal (the run goes on)"),
    Binding("full_stop", "browse(1)", "rnd▶", id="next_round", tooltip="Next round; past the last one: back to live"),
    Binding("g", "toggle_matrix", "matrix", id="toggle_matrix",
            tooltip="Switch the graph pane between the graph and the similarity matrix"),
    Binding("d", "toggle_removed", "removed", id="toggle_removed",
            tooltip="Show the edges removed by k_in or cycle breaking, dimmed, with the reason"),
    Binding("i", "toggle_problem", "problem", id="toggle_problem", tooltip="Show the full problem text"),
    Binding("m", "toggle_maximize", "max", id="maximize", tooltip="Maximise the focused pane (again to restore)"),
    Binding("c", "copy", "copy", id="copy", tooltip="Copy the focused pane's text (output, answer, graph)"),
    Binding("ctrl+s", "save", "save", id="save", tooltip="Save the session file now"),
    Binding("x", "cancel_run", "cancel", id="cancel", tooltip="Cancel the run; the session so far is kept"),
    Binding("o", "open_sessions", "open", id="open_session",
            tooltip="Open a saved session or a shipped example in the replay screen (the session picker)"),
    Binding("question_mark,f1", "help", "help", id="help", tooltip="List every key and what it does"),
    Binding("q", "request_quit", "quit", id="quit", tooltip="Quit (asks first while a swarm is running)"),
]

REPLAY_BINDINGS: list[Binding] = [
    Binding("n", "step_phase", "phase▶", id="replay_next_phase", tooltip="Replay up to the next phase"),
    Binding("b", "back_phase", "◀phase", id="replay_prev_phase", tooltip="Step back one phase"),
    Binding("N", "step_round", "round▶", id="replay_next_round", tooltip="Replay up to the next round"),
    Binding("B", "back_round", "◀round", id="replay_prev_round", tooltip="Step back one round"),
    Binding("space", "toggle_pause", "play", key_display="spc", id="replay_play", tooltip="Play / pause the replay"),
    Binding("right_square_bracket", "speed(2)", "faster", id="replay_faster", tooltip="Play twice as fast"),
    Binding("left_square_bracket", "speed(0.5)", "slower", id="replay_slower", tooltip="Play half as fast"),
    Binding("j", "jump", "jump", id="replay_jump", tooltip="Jump to a round"),
    Binding("t", "tau(0.05)", "tau+", id="tau_up", tooltip="What-if: raise tau by 0.05 (HYPOTHETICAL graph)"),
    Binding("T", "tau(-0.05)", "tau-", id="tau_down", tooltip="What-if: lower tau by 0.05 (HYPOTHETICAL graph)"),
    Binding("k", "k_in(1)", "k_in+", id="k_in_up", tooltip="What-if: one more inbound edge per agent"),
    Binding("K", "k_in(-1)", "k_in-", id="k_in_down", tooltip="What-if: one fewer inbound edge per agent"),
    Binding("comma", "browse(-1)", "◀rnd", id="prev_round", tooltip="Look at an earlier round"),
    Binding("full_stop", "browse(1)", "rnd▶", id="next_round", tooltip="Next round; past the last one: follow"),
    Binding("g", "toggle_matrix", "matrix", id="toggle_matrix", tooltip="Graph or similarity matrix"),
    Binding("d", "toggle_removed", "removed", id="toggle_removed", tooltip="Show removed edges and why"),
    Binding("i", "toggle_problem", "problem", id="toggle_problem", tooltip="Show the full problem text"),
    Binding("m", "toggle_maximize", "max", id="maximize", tooltip="Maximise the focused pane"),
    Binding("c", "copy", "copy", id="copy", tooltip="Copy the focused pane's text"),
    Binding("f", "fork", "fork", id="replay_fork",
            tooltip="Fork from this round: continue live from the round being viewed with the current tau/k_in"),
    Binding("o", "open_sessions", "open", id="open_session",
            tooltip="Open another saved session or a shipped example (the session picker)"),
    Binding("escape", "back", "back", id="replay_back",
            tooltip="Back to the session picker this replay was opened from"),
    Binding("question_mark,f1", "help", "help", id="help", tooltip="List every key and what it does"),
    Binding("q", "request_quit", "quit", id="quit", tooltip="Quit"),
]
