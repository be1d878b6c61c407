"""Privacy accounting: profiles, RDP, privacy loss distributions, conversions, the accountant.

>>> from infodp.accounting import compose, gaussian_profile
>>> round(compose(gaussian_profile(1.0), gaussian_profile(1.0)).rdp(2.0), 6)
2.0
"""

from __future__ import annotations

from infodp.accounting.pld import PrivacyLossDistribution
from infodp.accounting.profile import (
    PrivacyProfile,
    approximate_dp_profile,
    compose,
    discrete_gaussian_profile,
    discrete_laplace_profile,
    gaussian_profile,
    laplace_profile,
    parallel,
    post_process,
    pure_dp_profile,
    randomized_response_profile,
    subsampled_gaussian_profile,
)

__all__ = [
    "PrivacyLossDistribution",
    "PrivacyProfile",
    "approximate_dp_profile",
    "compose",
    "discrete_gaussian_profile",
    "discrete_laplace_profile",
    "gaussian_profile",
    "laplace_profile",
    "parallel",
    "post_process",
    "pure_dp_profile",
    "randomized_response_profile",
    "subsampled_gaussian_profile",
]
