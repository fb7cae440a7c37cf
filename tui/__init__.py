"""Textual front end and the command-line entry point."""
