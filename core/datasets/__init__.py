"""Datasets: benchmark problem sets by name and by format (a leaf: knows nothing of runs)."""
