"""The clinic store every relations test reads (tests/_clinic.py)."""

from __future__ import annotations

import pytest

from _clinic import clinic_store
from infodp.curator.backends.duckdb import DuckDBBackend


@pytest.fixture
def clinic() -> DuckDBBackend:
    return clinic_store()
