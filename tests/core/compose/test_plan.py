"""Plan once, then open (core.compose.plan): a run's team, method, parameters and embedder are settled once,
from the settings, and the same plan is what opens; no face resolves a team or builds a RunControl itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from core.compose.compare import ComparePlan
from core.compose.plan import RunPlan
from core.methods.registry import MethodError
from core.runtime.config import ConfigError, Settings
from core.runtime.control import ControlMode

ROOT = Path(__file__).resolve().parents[3]


def test_a_plan_holds_the_team_the_method_and_the_parameters_of_its_settings() -> None:
    settings = Settings(domain="math", strategy="star", tau=0.4, k_in=2, max_rounds=4,
                        strategy_options={"star": {"hub": "Solver"}})
    plan = RunPlan.make(settings)
    assert plan.team.name == "math" and plan.method.name == "star"
    assert plan.method.options["hub"] == "Solver"  # type: ignore[attr-defined]
    assert plan.params.as_dict() == {"tau": 0.4, "k_in": 2, "max_rounds": 4}
    control = plan.new_control(step=True)
    assert control.mode == ControlMode.STEP and control.params == plan.params


def test_a_bad_option_or_team_fails_making_the_plan_with_one_line() -> None:
    with pytest.raises(MethodError, match="hub must be one of"):
        RunPlan.make(Settings(strategy="star", strategy_options={"star": {"hub": "Nobody"}}))
    with pytest.raises(ConfigError, match="unknown team 'nobody'"):
        RunPlan.make(Settings(team="nobody"))


def test_a_comparison_checks_each_method_once_and_opens_the_plans_it_checked() -> None:
    plan = ComparePlan("x", Settings(domain="math"), ["single", "star"], options={"star": {"hub": "Solver"}})
    plan.check()
    plans = plan.take_plans()
    assert [p.method.name for p in plans.values()] == ["single", "star"]
    assert plans["single"].team is plans["star"].team  # one team for every run
    assert plan.take_plans()["star"].method is not plans["star"].method  # a method object serves one run


def _calls(name: str) -> list[str]:
    """Where ``name(`` is called in the app's code (not its tests)."""
    found = []
    for path in sorted([*ROOT.joinpath("core").rglob("*.py"), *ROOT.joinpath("tui").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if called == name:
                    found.append(str(path.relative_to(ROOT)))
    return found


def test_teams_controls_and_embedders_are_made_in_one_place() -> None:
    # core/runtime/teams.py's own with_team reads the team it defines; every face goes through the plan.
    assert [p for p in _calls("resolve_team") if p != "core/runtime/teams.py"] == ["core/compose/plan.py"]
    assert _calls("RunControl") == ["core/compose/plan.py"]
    assert _calls("shared_embedder") == ["core/compose/plan.py"]
