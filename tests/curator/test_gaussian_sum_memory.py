"""A Gaussian SUM over a wide float column is priced and answered in bounded memory.

A float column with bounds [0, 1000] has a SUM sensitivity of about 2^21 grid units, so its
discrete Gaussian has σ ≈ 1.7e7 grid units at (1, 1e-6). The calibrated σ is checked against
Balle & Wang's (2018, Theorem 8) analytic σ for the same (ε, δ) share and sensitivity, which
the discrete Gaussian at this σ matches to far below the calibration's tolerance; the
half-width against the normal quantile (the discrete Gaussian's tail is the continuous one's
to O(1/σ²) at this σ).
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from _stores import cats, floats, one_table
from infodp.accounting import profile as profile_module
from infodp.curator.engine import Curator
from infodp.curator.price import cost as cost_module
from infodp.mechanisms.gaussian import analytic_gaussian_sigma
from infodp.mechanisms.sampling import InsecureSeededSource

SCHEMA = one_table("t", {"g": cats("a", "b"), "v": floats(0, 1000)}, public_rows=200)
SQL = "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g"
PEAK_BYTES = 200 * 2**20


def curator(path: Path) -> Curator:
    cur = Curator(path, source=InsecureSeededSource(0, i_understand_this_is_not_private=True))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"g": rng.choice(["a", "b"], 200), "v": rng.uniform(0, 1000, 200)})
    cur.register_dataset("t", frame, SCHEMA)
    return cur


@pytest.mark.slow  # ~0.8 CPU-s (measured)
def test_gaussian_sum_over_a_wide_float_column_is_priced_in_bounded_memory(
    tmp_path: Path,
) -> None:
    cur = curator(tmp_path / "c.duckdb")
    cur.add_analyst("a", "t", epsilon=10, delta="1e-3")
    # Cold caches, so the pricing below builds the PLDs and calibrates σ itself.
    cost_module._mechanism.cache_clear()
    profile_module._cached_pld.cache_clear()
    tracemalloc.start()
    try:
        estimate = cur.estimate(SQL, epsilon=1, delta="1e-6", noise="gaussian")
        result = cur.query("a", SQL, epsilon=1, delta="1e-6", noise="gaussian")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        cur.close()
    assert peak < PEAK_BYTES
    (part,) = [p for p in result.cost.parts if p.sensitivity > 2**20]
    mech = part.mechanism
    assert mech.sigma > 1e7  # the case that needed ~1.4e9 atoms per PLD before
    analytic = analytic_gaussian_sigma(float(part.epsilon), float(part.delta), part.sensitivity)
    assert analytic <= mech.sigma <= analytic * 1.001
    (acc,) = [a for a in estimate["accuracy"] if a["measurement"] == "sum(v)"]
    z = stats.norm.isf(0.025)
    assert z * mech.sigma * part.step <= acc["halfwidth"] <= (z * mech.sigma + 2) * part.step
    assert len(result.rows) == 2
