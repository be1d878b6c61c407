"""The attacks the source documents use to explain what differential privacy does and does not
stop; each is a runnable function returning a frozen result with ``to_dict()`` and is exposed
as ``infodp attack NAME``.

- :func:`floating_point_attack` — Mironov (2012): reachable doubles of textbook Laplace;
- :func:`averaging_attack` — repeated queries against an unbudgeted curator vs infodp's ledger;
- :func:`coding_attack` — the 2022 article's "broken wifi": error-correcting codes through ε-DP
queries,
  rate vs Shannon capacity;
- :func:`correlated_attack` — Cuff & Yu (2016), Example 4.1: correlated rows;
- :func:`epsilon_delta_attack` — the 2022 article's (ε, δ) catastrophe;
- :func:`insertion_attack` — Ünsal & Önen (2023, §5.1): the largest shift an inserted
  record can cause at a given detection rate.

>>> from infodp.audit.attacks import fano_information_bits
>>> fano_information_bits(4, 0.0)
4.0
"""

from __future__ import annotations

from infodp.audit.attacks.averaging import AveragingResult, UnbudgetedCurator, averaging_attack
from infodp.audit.attacks.coding import (
    CodeResult,
    CodingResult,
    coding_attack,
    fano_information_bits,
    repetition_length,
)
from infodp.audit.attacks.correlated import (
    CorrelatedResult,
    correlated_attack,
    correlated_mutual_information,
    independent_mutual_information,
)
from infodp.audit.attacks.epsilon_delta import (
    EpsilonDeltaResult,
    catastrophe_mechanism,
    epsilon_delta_attack,
)
from infodp.audit.attacks.floating_point import (
    FloatingPointResult,
    floating_point_attack,
    naive_laplace,
    reachable_from,
    snapped_laplace_release,
)
from infodp.audit.attacks.insertion import (
    InsertionResult,
    detection_power,
    insertion_attack,
    max_undetected_shift,
    profile_undetected_shift,
    rate_distortion_insertion_variance,
)

__all__ = [
    "AveragingResult",
    "CodeResult",
    "CodingResult",
    "CorrelatedResult",
    "EpsilonDeltaResult",
    "FloatingPointResult",
    "InsertionResult",
    "UnbudgetedCurator",
    "averaging_attack",
    "catastrophe_mechanism",
    "coding_attack",
    "correlated_attack",
    "correlated_mutual_information",
    "detection_power",
    "epsilon_delta_attack",
    "fano_information_bits",
    "floating_point_attack",
    "independent_mutual_information",
    "insertion_attack",
    "max_undetected_shift",
    "naive_laplace",
    "profile_undetected_shift",
    "rate_distortion_insertion_variance",
    "reachable_from",
    "repetition_length",
    "snapped_laplace_release",
]
