"""Composition: builds a run from a method, an endpoint (or the demo server) and a recorder; the faces use it."""
