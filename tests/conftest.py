"""Shared pytest configuration."""

from __future__ import annotations

import os

# One BLAS thread per process, set before numpy is imported: the suite runs one xdist worker
# per core, and OpenBLAS's own threads on top of that oversubscribed the cores and made the
# small L-BFGS-B searches of the capacity tests about 5x slower (xdist workers inherit this).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# A test that starts Spark or PostgreSQL carries its mark (tests/_mark_guard.py).
from _mark_guard import check_marks, pytest_runtest_call, pytest_runtest_setup  # noqa: E402, F401

# CI machines are shared and noisy: no deadlines, a fixed number of examples, and the same
# examples on every run (derandomize) so that CI is reproducible. Explore with fresh random
# examples locally with HYPOTHESIS_PROFILE=explore.
settings.register_profile(
    "infodp",
    deadline=None,
    max_examples=60,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "explore", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow]
)
# The quick tier (bash scripts/test.sh --quick): the same derandomized examples, fewer of them
# (tests that set their own max_examples keep it; the heaviest are marked slow instead).
settings.register_profile(
    "quick",
    deadline=None,
    max_examples=15,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "infodp"))

#: In the quick tier, no property test runs more examples than this, even one that sets its own
#: max_examples (the full run keeps every test's own count).
QUICK_EXAMPLES = 15


#: Doctests of src/infodp over the quick tier's bound (about 0.3 s of one core; the `slow`
#: mark in pyproject.toml): calibration searches, fine-grid profiles, attacks, model fits,
#: servers, plots. Marked slow here, as tests over it are, so the quick tier leaves them to the
#: full run.
SLOW_DOCTESTS = frozenset(
    {
        "infodp.accounting.interop._opacus.get_noise_multiplier",
        "infodp.accounting.profile.discrete_subsampled_gaussian_profile",
        "infodp.accounting.schedule",
        "infodp.audit.attacks.averaging",
        "infodp.audit.attacks.epsilon_delta",
        "infodp.audit.attacks.insertion",
        "infodp.audit.auditor",
        "infodp.curator.session.Session.synthesize",
        "infodp.curator.store.database.reinit_ledger",
        "infodp.explain.html.render_html",
        "infodp.explain.html.write_html",
        "infodp.mechanisms.subsampled",
        "infodp.mechanisms.subsampled.SubsampledGaussian.calibrate",
        "infodp.server._heap",
        "infodp.server.service.Service",
        "infodp.synthetic.aim",
        "infodp.synthetic.budget",
        "infodp.synthetic.release",
        "infodp.testing.channels",
        "infodp.testing.distribution_pairs",
        "infodp.testing.joint_distributions",
    }
)


#: The longest tests of a full run (``--durations``: 17-95 s of one worker each), started
#: first: with two workers, one of them met late would leave the other idle while it runs
#: alone at the end (longest-processing-time-first scheduling, Graham 1969).
LONGEST_FIRST = (
    "tests/server/test_timing.py::test_padded_answer_times_and_statuses_do_not_separate_",
    "tests/accounting/test_schedule.py::test_vectorised_schedule_is_an_upper_bound_within_",
    "tests/server/test_fleet_run.py::test_a_fleet_keeps_every_guarantee_through_kills_and_",
    "tests/test_docs_blocks.py::test_code_blocks_run[README.md]",
    "tests/curator/test_bool_columns.py::test_spark_reads_bool_columns_as_duckdb_does",
    "tests/channel/test_renyi_adversarial.py::test_memory_stays_bounded_for_thousands_of_",
    "tests/curator/store/test_registration.py::test_a_registration_killed_at_any_moment_",
)


def _longest_first(items: list[object]) -> None:
    """Move the :data:`LONGEST_FIRST` tests to the front, in that order (the rest keep theirs;
    every worker collects the same order, as xdist requires)."""

    def rank(item: object) -> int:
        node = str(getattr(item, "nodeid", ""))
        return next(
            (i for i, p in enumerate(LONGEST_FIRST) if node.startswith(p)), len(LONGEST_FIRST)
        )

    items.sort(key=rank)  # stable: the order within each rank is kept


# First, so that the marks added here count when -m deselects.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: object, items: list[object]) -> None:
    check_marks(items)
    for item in items:
        if getattr(item, "dtest", None) is not None and getattr(item, "name", "") in SLOW_DOCTESTS:
            item.add_marker(pytest.mark.slow)  # type: ignore[attr-defined]
    _longest_first(items)
    if os.environ.get("HYPOTHESIS_PROFILE") != "quick":
        return
    for item in items:
        fn = getattr(item, "obj", None)
        fn = getattr(fn, "__func__", fn)
        # hypothesis reads a test's settings from this attribute on every call (6.x).
        current = getattr(fn, "_hypothesis_internal_use_settings", None)
        if isinstance(current, settings) and current.max_examples > QUICK_EXAMPLES:
            fn._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
                current, max_examples=QUICK_EXAMPLES
            )


from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any  # noqa: E402

# -- Spark (tests/_spark.py) ------------------------------------------------------------------


@pytest.fixture(scope="session")
def _spark_process() -> Iterator[None]:
    """Stops the process's Spark session (if one was started) when the test session ends."""
    import _spark

    yield
    _spark.stop()


@pytest.fixture(scope="module")
def spark(_spark_process: None) -> Any:
    """The running local Spark session (started by the first test that asks)."""
    import _spark

    return _spark.session()


# -- PostgreSQL ledgers (tests/_postgres.py) ---------------------------------------------------

from pathlib import Path  # noqa: E402


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[object]:
    """A throw-away PostgreSQL cluster for this worker (started once, removed at the end).

    Missing PostgreSQL skips locally; on CI (``CI`` set) it fails: scripts/test.sh installs it.
    """
    from _postgres import cluster, pg_bin

    if pg_bin() is None or importlib_missing("psycopg"):
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL or psycopg is missing: scripts/test.sh installs both")
        pytest.skip("PostgreSQL (initdb) or psycopg is not installed")
    with cluster() as c:
        yield c


def importlib_missing(name: str) -> bool:
    """Whether module ``name`` cannot be imported."""
    import importlib.util

    return importlib.util.find_spec(name) is None


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test with each ledger storage: SQLite (the file beside the store) and
    PostgreSQL (each new store's ledger a new schema of the session's cluster)."""
    kind = str(request.param)
    if kind == "postgres":
        import infodp.curator.store.database as store

        pg = request.getfixturevalue("pg_cluster")
        monkeypatch.setattr(store, "default_ledger", lambda db: pg.new_schema())
    return kind


@pytest.fixture
def ledger_at(ledger_kind: str, request: pytest.FixtureRequest) -> Callable[[Path], str | Path]:
    """Where a test's ledger goes: the path it names (SQLite), or a new PostgreSQL schema."""
    if ledger_kind == "sqlite":
        return lambda path: path
    pg = request.getfixturevalue("pg_cluster")
    urls: dict[str, str] = {}  # one schema per path: the same path, the same ledger
    return lambda path: urls.setdefault(str(path), urls.get(str(path)) or pg.new_schema())


@pytest.fixture(scope="session")
def copied_store(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., tuple[str, dict[str, str]]]:
    """``build_store(directory, analysts, rows=...)`` (tests/_server_harness.py) for stores
    whose ledger is the file beside them: each (analysts, rows) is built once per process and
    its files copied into ``directory`` (the same paths, keys and contents; a copy takes
    milliseconds, a build about half a second)."""
    from _server_harness import build_store
    from _stores import BuiltOnce

    once: BuiltOnce[dict[str, str]] = BuiltOnce("built-store", tmp_path_factory.mktemp("built"))

    def copy(
        directory: Path, analysts: list[tuple[str, str, object]], *, rows: int = 200
    ) -> tuple[str, dict[str, str]]:
        keys = once.copy(
            (tuple(analysts), rows),
            lambda folder: build_store(folder, analysts, rows=rows)[1],
            Path(directory),
        )
        return str(Path(directory) / "store.duckdb"), dict(keys)

    return copy
