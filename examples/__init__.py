"""Runnable examples for the documentation (the survey release audited in the tutorials)."""
