"""Runnable examples of the Python API (``uv run python -m planner.examples.<name>``)."""
