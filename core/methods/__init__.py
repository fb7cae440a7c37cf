"""One module per method: DyTopo and the papers' baselines, TopoDIM, DMoA, TopoWeaver-R1.

Each module registers itself in ``core.methods.registry`` (a leaf that imports no method);
``core.methods.catalogue`` imports them all and is where the faces look a method up.
"""
