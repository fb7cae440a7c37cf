"""Descriptor texts whose MiniLM similarity the routing tests rely on."""

from __future__ import annotations

TESTER_QUERY = "I need the Developer's implementation of make_palindrome to verify against these test cases."
DEVELOPER_KEY = "I provide the complete Python implementation of make_palindrome and is_palindrome."
