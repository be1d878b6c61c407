"""Backends: one visitor per engine that turns a plan into bounded aggregates (DuckDB now)."""

from __future__ import annotations

__all__: list[str] = []
