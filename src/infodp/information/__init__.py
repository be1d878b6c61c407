"""Information measures on discrete distributions and channels, in nats.

Re-exports the public API of :mod:`~infodp.information.divergence`,
:mod:`~infodp.information.entropy`, :mod:`~infodp.information.mutual` and, for Laplace and
Gaussian distributions, :mod:`~infodp.information.continuous`.

>>> from infodp.information import renyi_divergence
>>> round(renyi_divergence([0.75, 0.25], [0.25, 0.75], float("inf")), 6)
1.098612
"""

from __future__ import annotations

import typing as _typing

from infodp._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from infodp.information.continuous import (
        QuadratureResult,
        renyi_divergence_gaussian,
        renyi_divergence_laplace,
        renyi_divergence_quadrature,
    )
    from infodp.information.divergence import (
        hockey_stick_divergence,
        kl_divergence,
        max_divergence,
        renyi_divergence,
        tilted_log_mean,
        total_variation,
    )
    from infodp.information.entropy import (
        binary_entropy,
        binary_entropy_deficit,
        binary_renyi_entropy,
        inverse_binary_entropy,
        inverse_binary_entropy_deficit,
        min_entropy,
        renyi_entropy,
        shannon_entropy,
    )
    from infodp.information.mutual import (
        conditional_mutual_information,
        joint_mutual_information,
        maximal_leakage,
        min_entropy_leakage,
        mutual_information,
        renyi_mutual_information,
        sibson_mutual_information,
    )

# Imported on first use (infodp._lazy): importing one submodule stays cheap.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        "QuadratureResult": "infodp.information.continuous",
        "renyi_divergence_gaussian": "infodp.information.continuous",
        "renyi_divergence_laplace": "infodp.information.continuous",
        "renyi_divergence_quadrature": "infodp.information.continuous",
        "hockey_stick_divergence": "infodp.information.divergence",
        "kl_divergence": "infodp.information.divergence",
        "max_divergence": "infodp.information.divergence",
        "renyi_divergence": "infodp.information.divergence",
        "tilted_log_mean": "infodp.information.divergence",
        "total_variation": "infodp.information.divergence",
        "binary_entropy": "infodp.information.entropy",
        "binary_entropy_deficit": "infodp.information.entropy",
        "binary_renyi_entropy": "infodp.information.entropy",
        "inverse_binary_entropy": "infodp.information.entropy",
        "inverse_binary_entropy_deficit": "infodp.information.entropy",
        "min_entropy": "infodp.information.entropy",
        "renyi_entropy": "infodp.information.entropy",
        "shannon_entropy": "infodp.information.entropy",
        "conditional_mutual_information": "infodp.information.mutual",
        "joint_mutual_information": "infodp.information.mutual",
        "maximal_leakage": "infodp.information.mutual",
        "min_entropy_leakage": "infodp.information.mutual",
        "mutual_information": "infodp.information.mutual",
        "renyi_mutual_information": "infodp.information.mutual",
        "sibson_mutual_information": "infodp.information.mutual",
    },
)

__all__ = [
    "QuadratureResult",
    "binary_entropy",
    "binary_entropy_deficit",
    "binary_renyi_entropy",
    "conditional_mutual_information",
    "hockey_stick_divergence",
    "inverse_binary_entropy",
    "inverse_binary_entropy_deficit",
    "joint_mutual_information",
    "kl_divergence",
    "max_divergence",
    "maximal_leakage",
    "min_entropy",
    "min_entropy_leakage",
    "mutual_information",
    "renyi_divergence",
    "renyi_divergence_gaussian",
    "renyi_divergence_laplace",
    "renyi_divergence_quadrature",
    "renyi_entropy",
    "renyi_mutual_information",
    "shannon_entropy",
    "sibson_mutual_information",
    "tilted_log_mean",
    "total_variation",
]
