"""The benchmark runner (HumanEval, MATH-500) over every method."""
