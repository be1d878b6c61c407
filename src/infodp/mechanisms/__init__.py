"""Privacy mechanisms with secure exact sampling.

Every mechanism is an immutable value built from its noise parameter or calibrated from a
target (``calibrate(epsilon=…, delta=…, sensitivity=…)``, never overshooting ε). It releases
through ``release`` (exact discrete samplers on a cryptographic source; seeds refused unless
an explicit insecure test source is given), simulates through ``simulate`` (fast numpy, NOT
private), and exposes ``profile()`` (:class:`~infodp.accounting.PrivacyProfile` of the
release) and ``channel(...)`` (a :class:`ChannelView`).

>>> from infodp.mechanisms import GaussianMechanism, RandomizedResponse
>>> GaussianMechanism.calibrate(1.0, 1e-5).profile().delta(1.0) <= 1e-5
True
>>> round(RandomizedResponse.coin_flip().profile().pure_epsilon(), 6)
1.098612
"""

from __future__ import annotations

import typing as _typing

from infodp._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from infodp.mechanisms.base import ChannelView, Mechanism
    from infodp.mechanisms.exponential import (
        ExponentialMechanism,
        ReportNoisyMax,
        permute_and_flip_probabilities,
    )
    from infodp.mechanisms.gaussian import (
        DiscreteGaussianMechanism,
        GaussianMechanism,
        analytic_gaussian_sigma,
        classic_gaussian_sigma,
        gaussian_delta,
    )
    from infodp.mechanisms.laplace import DiscreteLaplaceMechanism, LaplaceMechanism
    from infodp.mechanisms.partition import PartitionSelection
    from infodp.mechanisms.quantile import ExponentialQuantile
    from infodp.mechanisms.randomized_response import RandomizedResponse
    from infodp.mechanisms.sampling import CryptoRandomSource, InsecureSeededSource, RandomSource
    from infodp.mechanisms.staircase import StaircaseMechanism, optimal_gamma
    from infodp.mechanisms.subsampled import SubsampledGaussian

# Imported on first use (infodp._lazy): importing one submodule stays cheap.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        "ChannelView": "infodp.mechanisms.base",
        "Mechanism": "infodp.mechanisms.base",
        "ExponentialMechanism": "infodp.mechanisms.exponential",
        "ReportNoisyMax": "infodp.mechanisms.exponential",
        "permute_and_flip_probabilities": "infodp.mechanisms.exponential",
        "DiscreteGaussianMechanism": "infodp.mechanisms.gaussian",
        "GaussianMechanism": "infodp.mechanisms.gaussian",
        "analytic_gaussian_sigma": "infodp.mechanisms.gaussian",
        "classic_gaussian_sigma": "infodp.mechanisms.gaussian",
        "gaussian_delta": "infodp.mechanisms.gaussian",
        "DiscreteLaplaceMechanism": "infodp.mechanisms.laplace",
        "LaplaceMechanism": "infodp.mechanisms.laplace",
        "PartitionSelection": "infodp.mechanisms.partition",
        "ExponentialQuantile": "infodp.mechanisms.quantile",
        "RandomizedResponse": "infodp.mechanisms.randomized_response",
        "CryptoRandomSource": "infodp.mechanisms.sampling",
        "InsecureSeededSource": "infodp.mechanisms.sampling",
        "RandomSource": "infodp.mechanisms.sampling",
        "StaircaseMechanism": "infodp.mechanisms.staircase",
        "optimal_gamma": "infodp.mechanisms.staircase",
        "SubsampledGaussian": "infodp.mechanisms.subsampled",
    },
)

__all__ = [
    "ChannelView",
    "CryptoRandomSource",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "ExponentialQuantile",
    "GaussianMechanism",
    "InsecureSeededSource",
    "LaplaceMechanism",
    "Mechanism",
    "PartitionSelection",
    "RandomSource",
    "RandomizedResponse",
    "ReportNoisyMax",
    "StaircaseMechanism",
    "SubsampledGaussian",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "gaussian_delta",
    "optimal_gamma",
    "permute_and_flip_probabilities",
]
