"""Auditing: measure a mechanism's privacy from the outside, and the attacks from the sources.

An audit treats a mechanism as a black box: it samples M(D) and M(D') for neighbouring
datasets and turns the best distinguishing event into an ε lower bound that holds with a stated
confidence (Clopper–Pearson on held-out samples), a δ lower bound, and a lower bound on the
information leaked per individual (nats). A claim is refuted (``"violation"``) when a lower
bound exceeds it. See :func:`audit` and :mod:`infodp.audit.attacks`.

>>> from infodp.audit import epsilon_lower_bound
>>> round(epsilon_lower_bound(5000, 10_000, 1839, 10_000), 2)
0.94
"""

from __future__ import annotations

from infodp.audit.auditor import (
    REFERENCE_MECHANISMS,
    AuditResult,
    CallableMechanism,
    Check,
    VectorisedMechanism,
    as_mechanism,
    audit,
    neighbour_candidates,
    reference_mechanism,
)
from infodp.audit.estimators import (
    binary_kl,
    clopper_pearson,
    delta_lower_bound,
    epsilon_lower_bound,
    kl_lower_bound,
)
from infodp.audit.events import Event, Scorer, select_event
from infodp.audit.information import empirical_bernstein_upper, mi_lower_bound

__all__ = [
    "REFERENCE_MECHANISMS",
    "AuditResult",
    "CallableMechanism",
    "Check",
    "Event",
    "Scorer",
    "VectorisedMechanism",
    "as_mechanism",
    "audit",
    "binary_kl",
    "clopper_pearson",
    "delta_lower_bound",
    "empirical_bernstein_upper",
    "epsilon_lower_bound",
    "kl_lower_bound",
    "mi_lower_bound",
    "neighbour_candidates",
    "reference_mechanism",
    "select_event",
]
