"""Pure graph functions: DyTopo routing, orders and tiers, the baselines' fixed graphs."""
