"""The papers' baselines: one agent (single, single-turn) and the fixed graphs (random, broadcast, chain,
star) that run DyTopo's rounds. ``method``: their classes and registrations."""
