"""Report tables from the local model: registered with their per-person cost, queried free."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from infodp.curator.ledger import Ledger
from infodp.curator.store.local_reports import load_local_reports, register_local_reports
from infodp.errors import ParameterError
from infodp.local import OptimizedUnaryEncoding, Rappor
from infodp.mechanisms.sampling import InsecureSeededSource


@pytest.mark.parametrize(
    "mech", [OptimizedUnaryEncoding(1.0, 4), Rappor(2.0, 4, bits=10, hashes=2)], ids=str
)
def test_register_and_query_without_charge(tmp_path: Path, mech) -> None:  # type: ignore[no-untyped-def]
    src = InsecureSeededSource(3, i_understand_this_is_not_private=True)
    reports = [mech.release(v % 4, source=src) for v in range(400)]
    ledger = Ledger(tmp_path / "ledger.db")
    try:
        register_local_reports(ledger, "survey", mech, reports)
        before = [e.to_dict() for e in ledger.entries()]
        table = load_local_reports(ledger, "survey")
        for _ in range(5):  # any number of queries: post-processing
            freqs = table.frequencies()
        assert [e.to_dict() for e in ledger.entries()] == before == []
        assert ledger.budgets() == []
        direct = mech.estimate(reports)
        assert np.allclose(freqs.estimate, direct.estimate)
        assert table.per_person_cost == {"mechanism": "pure-dp", "epsilon": mech.epsilon}
        est, var = table.frequency(2)
        assert est == pytest.approx(direct.estimate[2]) and var > 0
        with pytest.raises(ParameterError, match="name"):
            register_local_reports(ledger, "survey", mech, reports)
    finally:
        ledger.close()
