"""TopoWeaver-R1: an Orchestrator writes the team as a layered DAG each turn. ``method`` the protocol and
registration, ``plan`` the YAML plan and its validator, ``prompts``, ``events`` and ``steer`` (its hook)."""
