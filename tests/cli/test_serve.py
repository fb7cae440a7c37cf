"""``swarm-tui serve``: who can reach it, the run's arguments checked before serving, and the spectator's
read-only view (a live demo run in the app; the browser tier drives the served page itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tui import live_app, wait_for
from tui.cli.serve import command, reach
from tui.entry import main
from tui.spectate import REFUSAL, SPECTATE_ENV, refused, spectating


def test_loopback_reaches_no_one_else_and_any_other_address_says_who() -> None:
    assert reach("127.0.0.1", 8000) is None and reach("localhost", 8000) is None and reach("::1", 8000) is None
    assert "every network interface" in (reach("0.0.0.0", 8000) or "")
    assert "192.0.2.7 on port 9000" in (reach("192.0.2.7", 9000) or "")


@pytest.mark.parametrize(("argv", "says"), [
    (["serve", "--spectate"], "needs a run to watch"),
    (["serve", "--demo", "--headless"], "--headless"),
    (["serve", "--demo", "--spectate", "--step"], "--step"),
    (["serve", "bench", "humaneval"], "not bench"),
    (["serve", "--spectate", "attach"], "attach needs a session file or a task id"),
    (["serve", "--demo", "--port", "0"], "not a port"),
])
def test_a_run_that_cannot_be_served_is_one_line_and_exit_2(argv: list[str], says: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1


def test_the_served_command_carries_the_run_and_the_spectator_flag() -> None:
    line = command(["--demo", "a problem; rm -rf /"], spectate=True)
    assert f" {SPECTATE_ENV}=1 " in line and "'a problem; rm -rf /'" in line  # quoted, not run
    assert SPECTATE_ENV not in command(["--demo"], spectate=False)
    assert spectating({SPECTATE_ENV: "1"}) and not spectating({})


def test_many_watch_one_run_by_serving_attach() -> None:
    """Each browser gets its own process: ``attach`` makes every one of them follow the same run."""
    from tui.cli.serve import check_run

    assert check_run(["attach", "abc123"], spectate=True) == ["attach", "abc123"]
    assert command(["attach", "abc123"], spectate=True).endswith("-m tui attach abc123")


def test_refused_keys_are_the_ones_that_change_the_run() -> None:
    for action in ("step_phase", "step_round", "toggle_pause", "auto_run", "tau(0.05)", "k_in(-1)", "reroute",
                   "cancel_run", "save", "fork", "open_sessions", "steer"):
        assert refused(action), action
    for action in ("browse(1)", "toggle_matrix", "toggle_removed", "inbox", "search", "help", "request_quit"):
        assert not refused(action), action


@pytest.mark.usefixtures("embedder")
async def test_a_spectator_cannot_step_tune_or_cancel_and_is_told_so(tmp_path: Path) -> None:
    app = live_app(tmp_path, spectate=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.swarm_screen is not None and app.swarm_screen.model.current >= 1)
        model = app.swarm_screen.model
        params = dict(model.params)
        for key in ("n", "t", "k", "x", "space"):
            await pilot.press(key)
        await pilot.pause(0.1)
        said = [n.message for n in app._notifications]
        assert REFUSAL in said
        await wait_for(pilot, lambda: model.finished is not None)
        assert model.finished.reason == "manager"  # not cancelled, never paused in step mode
        assert model.params == params  # tau and k_in untouched
        await pilot.press("comma")  # looking back is allowed
        await pilot.pause(0.1)


def test_a_spectator_may_step_and_play_a_replay_but_not_what_if_or_fork_it() -> None:
    for action in ("step_phase", "back_round", "toggle_pause", "speed(2)", "jump"):
        assert not refused(action, replay=True), action
    assert refused("step_phase") and refused("toggle_pause")  # the same keys on a live run
    for action in ("tau(0.05)", "k_in(1)", "fork", "open_sessions"):
        assert refused(action, replay=True), action


def test_the_served_page_takes_its_font_from_the_server_not_a_font_service() -> None:
    import textual_serve

    from tui.cli.serve_server import local_fonts

    template = (Path(textual_serve.__file__).parent / "templates" / "app_index.html").read_text(encoding="utf-8")
    page = local_fonts(template)
    assert "googleapis" not in page and "/static/fonts/RobotoMono" in page
