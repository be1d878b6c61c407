"""Shared pytest configuration."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# CI machines are shared and noisy: no deadlines, a fixed number of examples, and the same
# examples on every run (derandomize) so that CI is reproducible. Explore with fresh random
# examples locally with HYPOTHESIS_PROFILE=explore.
settings.register_profile(
    "infodp",
    deadline=None,
    max_examples=60,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "explore", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "infodp"))
