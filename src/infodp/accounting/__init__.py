"""Privacy accounting: profiles, RDP, privacy loss distributions, conversions, the accountant.

>>> from infodp.accounting import compose, gaussian_profile
>>> round(compose(gaussian_profile(1.0), gaussian_profile(1.0)).rdp(2.0), 6)
2.0
"""

from __future__ import annotations

import typing as _typing

from infodp._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from infodp.accounting.accountant import Accountant, Budget
    from infodp.accounting.pld import PrivacyLossDistribution
    from infodp.accounting.profile import (
        PrivacyProfile,
        approximate_dp_profile,
        compose,
        discrete_gaussian_profile,
        discrete_laplace_profile,
        discrete_subsampled_gaussian_profile,
        gaussian_profile,
        laplace_profile,
        parallel,
        post_process,
        pure_dp_profile,
        randomized_response_profile,
        subsampled_gaussian_profile,
    )
    from infodp.accounting.spec import profile_from_spec, profile_to_spec

# Imported on first use (infodp._lazy): importing one submodule stays cheap.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        "Accountant": "infodp.accounting.accountant",
        "Budget": "infodp.accounting.accountant",
        "PrivacyLossDistribution": "infodp.accounting.pld",
        "PrivacyProfile": "infodp.accounting.profile",
        "approximate_dp_profile": "infodp.accounting.profile",
        "compose": "infodp.accounting.profile",
        "discrete_gaussian_profile": "infodp.accounting.profile",
        "discrete_laplace_profile": "infodp.accounting.profile",
        "discrete_subsampled_gaussian_profile": "infodp.accounting.profile",
        "gaussian_profile": "infodp.accounting.profile",
        "laplace_profile": "infodp.accounting.profile",
        "parallel": "infodp.accounting.profile",
        "post_process": "infodp.accounting.profile",
        "pure_dp_profile": "infodp.accounting.profile",
        "randomized_response_profile": "infodp.accounting.profile",
        "subsampled_gaussian_profile": "infodp.accounting.profile",
        "profile_from_spec": "infodp.accounting.spec",
        "profile_to_spec": "infodp.accounting.spec",
    },
)

__all__ = [
    "Accountant",
    "Budget",
    "PrivacyLossDistribution",
    "PrivacyProfile",
    "approximate_dp_profile",
    "compose",
    "discrete_gaussian_profile",
    "discrete_laplace_profile",
    "discrete_subsampled_gaussian_profile",
    "gaussian_profile",
    "laplace_profile",
    "parallel",
    "post_process",
    "profile_from_spec",
    "profile_to_spec",
    "pure_dp_profile",
    "randomized_response_profile",
    "subsampled_gaussian_profile",
]
