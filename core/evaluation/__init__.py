"""Verification: run candidate code against tests in a sandboxed subprocess, and check math answers.

Submodules: ``sandbox`` (code execution with limits), ``extract`` (code and tests from agent text),
``math_answers`` (final-answer extraction and equivalence). Nothing is imported here: a run's first request
does not wait for the sandbox's imports (bench/first_request.py).
"""
