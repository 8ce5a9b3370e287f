"""Bundled replay scenarios (the demo)."""
