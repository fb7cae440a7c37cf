"""Benchmark session file names (core.bench.runner.session_name): needs no dataset."""

from __future__ import annotations

import re

from core.bench.runner import session_name


def test_session_names_are_unique_for_ids_that_differ_only_in_unsafe_characters() -> None:
    ids = ["HumanEval/0", "HumanEval_0", "HumanEval 0", "HumanEval//0", "../HumanEval/0", "HumanEval/0 "]
    names = [session_name(task_id) for task_id in ids]
    assert len(set(names)) == len(ids), names
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", name) and not name.startswith(".") for name in names)
    assert session_name("HumanEval_0") == "HumanEval_0"  # a safe id is its own name
    assert session_name("HumanEval/0") == session_name("HumanEval/0")  # stable across runs
    assert session_name("HumanEval/0").startswith("HumanEval_0-")
