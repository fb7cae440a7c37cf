"""A method the app does not name: registered through the registry's test hook it is listed, launched and
run like a built-in; a plugin whose entry point fails to import is listed with its one-line error and
breaks no other method (core.methods.catalogue)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Input, Select

from core.methods import catalogue
from core.methods.registry import MethodError
from core.runtime.config import Settings
from tests.core.methods import plugin_dummy
from tests.support.tui import form_app
from tui.cli.main import main
from tui.screens.launch import LaunchScreen


@pytest.fixture
def dummy() -> Iterator[None]:
    plugin_dummy.install()
    yield
    plugin_dummy.remove()


@pytest.fixture
def broken_plugin(tmp_path: Path) -> Iterator[str]:
    """An installed distribution (a dist-info folder on sys.path) whose entry point names a missing module."""
    info = tmp_path / "broken_method-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-method\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{catalogue.GROUP}]\nbroken = no_such_module_for_swarm:INFO\n")
    sys.path.insert(0, str(tmp_path))
    catalogue.installed.cache_clear()
    yield "broken"
    sys.path.remove(str(tmp_path))
    catalogue.installed.cache_clear()
    catalogue._errors.pop("broken", None)


def test_a_registered_method_is_listed_with_its_options(dummy: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategies"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith(plugin_dummy.NAME))
    assert line.split(maxsplit=1)[1] == "an echo registered by a test through the registry's hook"
    assert "-o loudness=2 (1..5): how loud the echo is" in out
    assert plugin_dummy.NAME in catalogue.method_names()


def test_a_registered_method_runs_headless_with_its_own_demo_script(
    dummy: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--headless", "--demo", "--domain", "general", "--strategy", plugin_dummy.NAME, "-o", "loudness=3",
                 "--save", str(tmp_path / "echo.json"), "Say something."])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert plugin_dummy.ANSWER in out
    assert '"loudness": 3' in (tmp_path / "echo.json").read_text()  # the session records its options


def test_a_registered_method_s_bad_option_is_one_line(dummy: None, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--headless", "--demo", "--strategy", plugin_dummy.NAME, "-o", "loudness=9", "x"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"[strategy.{plugin_dummy.NAME}] loudness must be between 1 and 5, got 9" in err


async def test_a_registered_method_is_offered_by_the_launch_form(dummy: None, tmp_path: Path) -> None:
    app = form_app(Settings(sessions_dir=str(tmp_path)))
    async with app.run_test(size=(160, 48)) as pilot:
        form = app.screen
        assert isinstance(form, LaunchScreen)
        select = form.query_one("#strategy", Select)
        assert plugin_dummy.NAME in [value for _, value in select._options]
        select.value = plugin_dummy.NAME
        await pilot.pause(0.2)
        labels = [str(label.render()) for label in form.query("#method-options Label")]
        assert "loudness (1..5)" in labels and form.query_one("#opt-loudness", Input)


def test_a_plugin_that_fails_to_import_is_listed_with_its_error(
    broken_plugin: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert broken_plugin in catalogue.method_names()
    assert main(["strategies"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith(broken_plugin))
    assert "NOT AVAILABLE: ModuleNotFoundError: No module named 'no_such_module_for_swarm'" in line
    assert "Traceback" not in out and "dytopo" in out and "dmoa" in out  # the others are still listed
    with pytest.raises(MethodError, match="could not be loaded"):
        catalogue.get_method_info(broken_plugin)
    catalogue.load_all()  # loading every method skips it
    assert catalogue.get_method_info("single").name == "single"


def test_choosing_a_broken_plugin_is_one_line(broken_plugin: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--headless", "--demo", "--strategy", broken_plugin, "x"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "could not be loaded: ModuleNotFoundError" in err


def test_the_built_ins_are_declared_as_entry_points_in_their_listed_order() -> None:
    """pyproject.toml's group is what an install publishes; the catalogue's fast path for built-ins (no metadata
    scan before a run's first request) must name the same objects, in the order `strategies` lists them."""
    import tomllib

    from tests.support.paths import ROOT

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][catalogue.GROUP]
    assert declared == catalogue._BUILTIN and list(declared) == list(catalogue._BUILTIN)
    for name in declared:
        assert catalogue.get_method_info(name).name == name
