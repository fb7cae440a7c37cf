"""Verification: run candidate code against tests in a sandboxed subprocess, and check math answers.

Submodules: ``sandbox`` (code execution with limits), ``extract`` (code and tests from agent text),
``math_answers`` (final-answer extraction and equivalence).
"""

from core.evaluation.sandbox import Outcome, SandboxLimits, SandboxResult, arun_code, run_code

__all__ = ["Outcome", "SandboxLimits", "SandboxResult", "arun_code", "run_code"]
