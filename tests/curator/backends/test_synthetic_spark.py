"""A synthetic release of a Spark dataset is refused before anything is charged (synthetic data
reads DuckDB stores only)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from _stores import cats, one_table
from infodp.errors import ParameterError

pytestmark = pytest.mark.spark


def test_a_spark_dataset_is_refused_for_free(spark: Any) -> None:
    from infodp import Session

    frame = pd.DataFrame({"g": ["a", "b"] * 20})
    declared = one_table("t", {"g": cats("a", "b")})
    s = Session(frame, declared, epsilon=2, delta="1e-5", backend="spark")
    try:
        with pytest.raises(ParameterError, match="synthetic data is not read on Spark"):
            s.synthesize("fake", epsilon=1, delta="1e-6")
        assert s.remaining_epsilon == 2.0
    finally:
        s.close()
