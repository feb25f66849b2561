"""Comparison mode: two objectives slot by slot."""
