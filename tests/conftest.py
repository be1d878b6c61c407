"""Shared pytest configuration."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# CI machines are shared and noisy: no deadlines, a fixed number of examples.
settings.register_profile(
    "infodp", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "infodp"))
