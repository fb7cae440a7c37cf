"""Where TopoWeaver-R1 departs from its paper.

core.methods.fidelity collects every method's list (MethodInfo.fidelity).
"""

from __future__ import annotations

from core.methods.registry import Deviation

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "topoweaver",
        "The Orchestrator is the user's own model prompted with the paper's rules, not the SFT+GRPO-trained "
        "Qwen2.5-3B orchestrator.",
        "No trained orchestrator weights are public; --orchestrator-model picks a different model for it.",
    ),
    Deviation(
        "topoweaver",
        "An invalid plan uses up its turn (Alg. 1), as in the paper; fallback=true runs a difficulty template "
        "instead.",
        "The template keeps a run useful on a model that cannot write the YAML; it is not the paper's.",
        "-o fallback=false (the default)",
        ("fallback", "false"),
        default_is_paper=True,
    ),
    Deviation(
        "topoweaver",
        "The tester's verdict needs code execution: without --execute no turn can pass, so K turns always run "
        "(DMoA's agents likewise test code only with --execute); the paper's agents always have a sandbox.",
        "Running generated code is the user's choice (a bubblewrap sandbox).",
        "--execute",
    ),
    Deviation(
        "topoweaver",
        "The Orchestrator's prompt shows the plan's shape with angle-bracketed slots (difficulty, notes, steps, "
        "agents with <agent id>, <agent type>, <ids of agents in earlier steps>) and one line saying to write "
        "its own values, then the paper's kind of filled plan marked as an example for another task. A plan that "
        "repeats a slot is asked for once more, then refused as no plan (counted as copied, never run, not shown "
        "back in the history). An agent's reply that only repeats its instructions is refused the same way.",
        "Small local models copy a filled example verbatim, and a copy of one passes for a plan (issue 44); a "
        "slot cannot. The fields asked for are the paper's (App. B.4).",
    ),
    Deviation(
        "topoweaver",
        "The Orchestrator and an agent whose id a later turn reuses each keep one growing conversation: each turn "
        "appends its request and the kept reply. The Orchestrator's later turns hold only the history H that is "
        "new since its last kept plan; a reused agent's hold the new view and what it reads, its earlier output "
        "(eq. 15's Mem) being its own assistant turn; the problem is said once. What it adds to the paper's "
        "prompt: the earlier turns' requests (asks, views and reads) stay in the transcript.",
        "Each request then begins with the previous one, so a server's prefix cache prefills only what is new "
        "(issue 46).",
        "-o prompt_order=paper",
        ("prompt_order", "paper"),
    ),
)
