"""Budgets per dataset (task "the curator leaks through side doors", item 5).

Every analyst used to spend a full budget on the same people, and registering the same data
under a new name started from zero. ``--max-epsilon``/``--max-delta`` cap what all analysts
together spend on a dataset, in the same ledger transaction as each analyst's own budget (so
concurrent processes cannot overshoot it); content identical to a registered dataset is
refused, naming it. Basic sequential composition (Dwork & Roth 2014, Thm 3.16): the people of
a dataset lose at most the sum of every analyst's ε, which is what the cap bounds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _stores import TEXT, ints, one_table
from infodp.cli import main
from infodp.curator.engine import Curator
from infodp.errors import BudgetExceeded, ParameterError

SCHEMA = one_table("t", {"x": ints(0, 9)})
FRAME = pd.DataFrame({"x": list(range(10)) * 5})


@pytest.mark.slow
def test_the_cap_is_shared_by_all_analysts(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    info = cur.register_dataset("t", FRAME, SCHEMA, max_epsilon="1", max_delta="0")
    assert info["max_epsilon"] == 1.0 and info["max_delta"] == 0.0
    for who in ("a", "b", "c"):
        cur.add_analyst(who, "t", epsilon=1)  # each alone could spend the whole cap
    cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.5")
    cur.query("b", "SELECT COUNT(*) FROM t", epsilon="0.3")
    with pytest.raises(BudgetExceeded, match="shared by all analysts") as err:
        cur.query("c", "SELECT COUNT(*) FROM t", epsilon="0.3")
    assert "epsilon=0.2" in str(err.value) and "short by epsilon=0.1" in str(err.value)
    # Refused: nothing spent by c, nothing added to the dataset's total.
    assert cur.ledger.budget("c", "t").spent_epsilon == 0
    assert cur.ledger.dataset("t").spent_epsilon == Fraction(4, 5)
    cur.query("c", "SELECT COUNT(*) FROM t", epsilon="0.2")  # exactly the rest fits
    assert cur.ledger.dataset("t").spent_epsilon == 1
    assert cur.ledger.verify() == []


def test_a_cancelled_reservation_is_refunded_to_the_dataset(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("t", FRAME, SCHEMA, max_epsilon="1")
    cur.add_analyst("a", "t", epsilon=5)
    entry = cur.ledger.reserve("a", "t", "SELECT 1", Fraction(3, 4), Fraction(0), 0.0)
    assert cur.ledger.dataset("t").spent_epsilon == Fraction(3, 4)
    cur.ledger.cancel(entry, "store not opened")
    assert cur.ledger.dataset("t").spent_epsilon == 0
    assert cur.ledger.verify() == []


_WORKER = textwrap.dedent(
    """
    import json, sys
    from infodp.curator.engine import Curator
    from infodp.errors import BudgetExceeded
    cur = Curator(sys.argv[1])
    released = 0
    while True:
        try:
            cur.query(sys.argv[2], "SELECT COUNT(*) FROM t", epsilon="0.05")
            released += 1
        except BudgetExceeded:
            break
    print(json.dumps({"released": released}))
    """
)


@pytest.mark.slow  # ~1.9 CPU-s (measured)
def test_concurrent_analysts_never_overshoot_the_dataset_cap(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    cur = Curator(db)
    cur.register_dataset("t", FRAME, SCHEMA, max_epsilon="1")
    for who in ("a", "b", "c"):
        cur.add_analyst(who, "t", epsilon=1)
    cur.close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(db), who],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("a", "b", "c")
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    released = sum(json.loads(out)["released"] for out, _ in outs)
    # 1 / 0.05 = 20 answers in total, however the three analysts raced for them.
    assert released == 20
    cur = Curator(db)
    assert cur.ledger.dataset("t").spent_epsilon == 1
    assert sum(b.spent_epsilon for b in cur.ledger.budgets()) == 1
    assert cur.ledger.verify() == []


@pytest.mark.slow
def test_delta_cap(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    schema = one_table("t", {"x": ints(0, 9), "k": TEXT})
    frame = pd.DataFrame({"x": list(range(10)) * 5, "k": ["a", "b"] * 25})
    cur.register_dataset("t", frame, schema, max_delta="1e-6")
    cur.add_analyst("a", "t", epsilon=10, delta="1e-3")
    sql = "SELECT k, COUNT(*) FROM t GROUP BY k"
    cur.query("a", sql, epsilon="1", delta="6e-7")
    with pytest.raises(BudgetExceeded, match="delta"):
        cur.query("a", sql, epsilon="1", delta="6e-7")


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"max_epsilon": "-1"}, "max_epsilon"),
        ({"max_epsilon": "nan"}, "max_epsilon"),
        ({"max_delta": "2"}, "max_delta"),
        ({"max_epsilon": True}, "max_epsilon"),
    ],
)
def test_bad_caps_are_refused(tmp_path: Path, kwargs: dict[str, object], name: str) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    with pytest.raises(ParameterError, match=name):
        cur.register_dataset("t", FRAME, SCHEMA, **kwargs)  # type: ignore[arg-type]
    assert cur.ledger.datasets() == []


def _csv(path: Path, frame: pd.DataFrame) -> str:
    frame.to_csv(path, index=False)
    return str(path)


@pytest.mark.slow  # ~0.8 CPU-s (measured)
def test_identical_content_is_refused_naming_the_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {"person_id": np.arange(50), "age": rng.integers(0, 100, 50), "region": ["n", "s"] * 25}
    )
    schema = tmp_path / "schema.yaml"
    schema.write_text(
        "table: people\nprivacy_unit: person_id\ncolumns:\n"
        "  age: {type: int, bounds: [0, 120]}\n"
        "  region: {type: category, categories: [n, s]}\n"
    )
    db = str(tmp_path / "s.duckdb")
    first = _csv(tmp_path / "a.csv", frame)
    base = ["dataset", "register", "--db", db, "--schema", str(schema), "--json"]
    assert main([*base, "--name", "people", "--source", first, "--max-epsilon", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["max_epsilon"] == 2.0 and len(out["fingerprint"]) == 64
    # The same people in another file, shuffled, with other column order: refused.
    shuffled = frame.sample(frac=1.0, random_state=1)[["region", "age", "person_id"]]
    for name, source in (
        ("people2", first),
        ("people3", _csv(tmp_path / "b.csv", shuffled)),
    ):
        assert main([*base, "--name", name, "--source", source]) == 2
        err = capsys.readouterr().err
        assert "'people'" in err and "identical" in err and err.count("\n") == 1
    # Values outside the bounds clamp to the same bounded table: the same people, refused.
    clamped = frame.copy()
    clamped.loc[clamped["age"] == clamped["age"].max(), "age"] = 120
    far = clamped.copy()
    far.loc[far["age"] == 120, "age"] = 500
    # The same people as people's, declared so (a likely copy needs a declaration).
    same = ["--same-population-as", "people"]
    assert main([*base, "--name", "c1", "--source", _csv(tmp_path / "c.csv", clamped), *same]) == 0
    capsys.readouterr()
    assert main([*base, "--name", "c2", "--source", _csv(tmp_path / "d.csv", far)]) == 2
    assert "'c1'" in capsys.readouterr().err
    # One person fewer is different content: accepted (declared, it shares people's budgets).
    fewer = _csv(tmp_path / "e.csv", frame[1:])
    assert main([*base, "--name", "fewer", "--source", fewer, *same]) == 0
    cur = Curator(db)
    assert [d.name for d in cur.ledger.datasets()] == ["c1", "fewer", "people"]
    # The refused registrations left no table behind.
    con = cur.backend.connect(read_only=True)
    try:
        listed = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        tables = {r[0] for r in listed}
    finally:
        con.close()
    assert {"people2", "people3", "c2"}.isdisjoint(tables)
