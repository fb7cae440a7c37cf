"""The scripted OpenAI-compatible server and its per-method scripts (tests and --demo)."""
