"""One module per method: DyTopo and the baselines, TopoDIM, DMoA, TopoWeaver-R1."""
