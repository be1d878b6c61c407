"""Backends: one class per engine (DuckDB, Spark) that runs the shared compiler's
statements (a visitor over the plan) and returns bounded aggregates."""

from __future__ import annotations

__all__: list[str] = []
