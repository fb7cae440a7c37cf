"""Paths the tests build from the checkout's root, in one place (the test folders are nested by layer)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout
FIXTURES = ROOT / "tests" / "fixtures"
