"""Tables of locally perturbed reports: registered once, queried for free.

In the local model (Erlingsson et al. 2014) every person randomises
their own value on their device; the curator only ever holds the reports. Each person has
then spent exactly the randomizer's per-report privacy (its pure-ε profile) — once, on the
device — and every frequency answer computed from the reports is post-processing, which costs
nothing more (Dwork & Roth 2014, Prop. 2.1). So registering a report table records that
per-person cost in the ledger (as a synopsis whose entry id is 0: nothing was reserved from
any analyst's budget) and later queries never reserve anything.

>>> import tempfile, pathlib
>>> from infodp.curator.ledger import Ledger
>>> from infodp.local import KRandomizedResponse
>>> with tempfile.TemporaryDirectory() as tmp:
...     ledger = Ledger(pathlib.Path(tmp) / "ledger.db")
...     table = register_local_reports(ledger, "bands", KRandomizedResponse(1.0, 3), [0, 1, 1, 2])
...     again = load_local_reports(ledger, "bands")
...     ledger.close()
>>> again.per_person_cost, round(float(again.frequencies().estimate.sum()), 12)
({'mechanism': 'randomized-response', 'epsilon': 1.0, 'k': 3}, 1.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypedDict, cast

import numpy as np
import numpy.typing as npt

from infodp.accounting import profile_to_spec
from infodp.curator.ledger import Ledger
from infodp.errors import ParameterError
from infodp.local import FrequencyEstimate, LocalRandomizer, randomizer

if TYPE_CHECKING:
    from infodp._jsonable import JsonObject

__all__ = ["LOCAL_REPORTS_KIND", "LocalReportTable", "load_local_reports", "register_local_reports"]

#: ``spec["kind"]`` of a report table stored among the ledger's synopses.
LOCAL_REPORTS_KIND = "local-reports"

#: One person's report: an item or column index (krr, hadamard), a bit vector (rappor, oue)
#: or a (seed, bucket) pair (olh).
LocalReport: TypeAlias = int | Sequence[int]


class _StoredSpec(TypedDict):
    """The spec :func:`register_local_reports` stores (read back by :func:`load_local_reports`)."""

    kind: str
    mechanism: str
    epsilon: float
    domain: int
    options: dict[str, int | None]
    per_person_cost: JsonObject


class _StoredData(TypedDict):
    support: list[int]
    users: int


@dataclass(frozen=True)
class LocalReportTable:
    """Support counts of ``users`` reports from ``mechanism``; answers cost nothing more."""

    name: str
    mechanism: LocalRandomizer
    mechanism_name: str
    support: npt.NDArray[np.int64]
    users: int

    @property
    def per_person_cost(self) -> JsonObject:
        """The profile spec each person spent on their device (the randomizer's)."""
        return profile_to_spec(self.mechanism.profile())

    def frequencies(self) -> FrequencyEstimate:
        """Unbiased frequencies, exact (plug-in) variances and the consistent version."""
        return self.mechanism.estimate_from_support(self.support, self.users)

    def frequency(self, item: int) -> tuple[float, float]:
        """(estimate, variance) of one item's frequency."""
        est = self.frequencies()
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < est.estimate.size:
            raise ParameterError("item", item, f"an integer in [0, {est.estimate.size - 1}]")
        return float(est.estimate[item]), float(est.variance[item])


def _name_of(mechanism: LocalRandomizer) -> str:
    names = {
        "KRandomizedResponse": "krr",
        "Rappor": "rappor",
        "OptimizedUnaryEncoding": "oue",
        "OptimizedLocalHashing": "olh",
        "HadamardResponse": "hadamard",
    }
    return names[type(mechanism).__name__]


def register_local_reports(
    ledger: Ledger, name: str, mechanism: LocalRandomizer, reports: Sequence[LocalReport]
) -> LocalReportTable:
    """Store the support counts of ``reports`` and the per-person cost under ``name``.

    Only aggregated support counts are kept (enough for every frequency query).
    """
    if len(reports) == 0:
        raise ParameterError("reports", "an empty list", "at least one report")
    support = np.zeros(mechanism.support_size, dtype=np.int64)
    for report in reports:
        support += mechanism.supports(report)
    kind = _name_of(mechanism)
    options: JsonObject = {}
    if kind == "rappor":
        options = {"bits": getattr(mechanism, "bits", None), "hashes": mechanism.hashes}  # type: ignore[attr-defined]
    spec: JsonObject = {
        "kind": LOCAL_REPORTS_KIND,
        "mechanism": kind,
        "epsilon": mechanism.epsilon,
        "domain": mechanism.domain,
        "options": options,
        "per_person_cost": profile_to_spec(mechanism.profile()),
    }
    data: JsonObject = {"support": [int(c) for c in support.tolist()], "users": len(reports)}
    ledger.save_synopsis(name, dataset=name, analyst="local", entry_id=0, spec=spec, data=data)
    return LocalReportTable(name, mechanism, kind, support, len(reports))


def load_local_reports(ledger: Ledger, name: str) -> LocalReportTable:
    """The report table stored under ``name`` (no budget is touched)."""
    _, _, stored_spec, stored_data = ledger.synopsis(name)
    if stored_spec.get("kind") != LOCAL_REPORTS_KIND:
        raise ParameterError("name", name, "the name of a registered table of local reports")
    # Written by register_local_reports (the kind says so).
    spec, data = cast(_StoredSpec, stored_spec), cast(_StoredData, stored_data)
    mechanism = randomizer(spec["mechanism"], spec["epsilon"], spec["domain"], **spec["options"])
    support = np.asarray(data["support"], dtype=np.int64)
    return LocalReportTable(name, mechanism, spec["mechanism"], support, int(data["users"]))
