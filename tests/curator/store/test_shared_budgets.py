"""Datasets of the same people share caps and budgets when their owner declares it.

A copy of a registered dataset with one dummy row has a new fingerprint; with fresh caps and
fresh analyst budgets on the same people their total privacy loss would be unbounded. The
owner declares such a copy ``same_population_as`` the original: it then shares its caps and
each analyst's spend account, recorded in the ledger. A grant still covers only the
datasets it names. A registration sketches its salted unit ids (bottom-k, Broder 1997) only
to advise: a dataset whose estimated containment in a registered one is at least 1/2 is
refused until the owner declares it either way. The containment estimator is checked
against the exact containment of random sets with the Hoeffding (1963) bound it states.
"""

from __future__ import annotations

import hashlib
import sqlite3
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _stores import TEXT, floats, ints, one_table, population, private, public
from infodp.curator.engine import Curator, NoBudget
from infodp.curator.request import Request
from infodp.curator.store.unit_overlap import (
    SHARE_THRESHOLD,
    Containment,
    UnitSketch,
    containment,
    sketch_units,
)
from infodp.errors import BudgetExceeded, ParameterError

SCHEMA = one_table("t", {"pid": TEXT, "x": ints(0, 9)}, unit="pid")
COUNT = "SELECT COUNT(*) FROM {}"


def people(ids: range | list[int], prefix: str = "p") -> pd.DataFrame:
    ids = list(ids)
    return pd.DataFrame({"pid": [f"{prefix}{i}" for i in ids], "x": [i % 10 for i in ids]})


def with_dummy(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([frame, pd.DataFrame({"pid": ["dummy"], "x": [3]})], ignore_index=True)


@pytest.fixture
def cur(tmp_path: Path) -> Curator:
    c = Curator(tmp_path / "s.duckdb")
    c.register_dataset("orig", people(range(3000)), SCHEMA, max_epsilon="1.5")
    return c


@pytest.mark.slow
def test_a_declared_copy_shares_caps_and_spend_but_not_grants(cur: Curator) -> None:
    cur.add_analyst("a", "orig", epsilon=1)
    info = cur.register_dataset(
        "copy", with_dummy(people(range(3000))), SCHEMA, same_population_as="orig"
    )
    assert info["shares_budgets_of"] == "orig"
    assert info["budgets"].startswith("copy shares the caps and budgets of dataset orig, as")
    assert cur.ledger.dataset("copy").budget_group == "orig"  # recorded in the ledger
    # The analyst granted on the original holds nothing on the copy: the same refusal as
    # on any dataset they were not granted.
    with pytest.raises(ParameterError, match="no budget on dataset 'copy'"):
        cur.ledger.budget("a", "copy")
    with pytest.raises(NoBudget):
        cur.answer("a", Request(COUNT.format("copy"), epsilon=Fraction(1, 4)))
    with pytest.raises(ParameterError, match="no budget on dataset 'copy'"):
        cur.query("a", COUNT.format("copy"), epsilon="0.25")
    assert [b.dataset for b in cur.ledger.budgets("a")] == ["orig"]
    # Granted on the copy too, with the group's budget: one spend account for both.
    assert cur.add_analyst("a", "copy", epsilon=1) is None  # their key covers it now
    assert cur.ledger.budget("a", "copy").epsilon == 1
    cur.query("a", COUNT.format("copy"), epsilon="0.75")
    assert cur.ledger.budget("a", "orig").spent_epsilon == Fraction(3, 4)
    assert cur.ledger.dataset("orig").spent_epsilon == Fraction(3, 4)  # the group's cap
    # Refused for the analyst's budget on both: 0.5 > 0.25 left.
    for name in ("orig", "copy"):
        with pytest.raises(BudgetExceeded, match=r"remaining epsilon=0\.25"):
            cur.query("a", COUNT.format(name), epsilon="0.5")
    # A second grant on the copy is the duplicate grant it is.
    with pytest.raises(ParameterError, match="shares the budgets of 'orig'"):
        cur.add_analyst("a", "copy", epsilon=1)
    # A grant made on the copy covers the copy only, and spends the group's cap of 3/2.
    cur.add_analyst("b", "copy", epsilon=1)
    with pytest.raises(ParameterError, match="no budget on dataset 'orig'"):
        cur.ledger.budget("b", "orig")
    with pytest.raises(ParameterError, match="no budget on dataset 'orig'"):
        cur.query("b", COUNT.format("orig"), epsilon="0.25")
    cur.query("b", COUNT.format("copy"), epsilon="0.5")
    with pytest.raises(BudgetExceeded, match="its cap, shared by all analysts"):
        cur.query("b", COUNT.format("copy"), epsilon="0.5")
    assert cur.ledger.dataset("orig").spent_epsilon == Fraction(5, 4)
    assert [e.dataset for e in cur.ledger.entries()] == ["copy", "copy"]
    assert cur.ledger.verify() == []


@pytest.mark.slow
def test_a_grant_on_a_second_copy_must_name_the_groups_budget(cur: Curator) -> None:
    cur.register_dataset("copy", with_dummy(people(range(3000))), SCHEMA, same_population_as="orig")
    cur.add_analyst("a", "orig", epsilon=1)
    with pytest.raises(ParameterError, match=r"already holds a budget on orig.*epsilon=1"):
        cur.add_analyst("a", "copy", epsilon=2)
    with pytest.raises(ParameterError, match="no budget on dataset 'copy'"):
        cur.ledger.budget("a", "copy")
    assert cur.ledger.verify() == []


@pytest.mark.slow
def test_a_likely_copy_is_refused_without_a_declaration(cur: Curator) -> None:
    with pytest.raises(ParameterError) as refused:
        cur.register_dataset("copy", with_dummy(people(range(3000))), SCHEMA)
    message = str(refused.value)
    assert "\n" not in message
    assert "about 100% of the units of 'copy' are in dataset 'orig'" in message
    assert "--same-population-as orig" in message and "--independent" in message
    assert [d.name for d in cur.ledger.datasets()] == ["orig"]  # nothing was created
    tables = [r[0] for r in cur.backend.connect(read_only=True).execute("SHOW TABLES").fetchall()]
    assert "copy" not in tables


@pytest.mark.slow
def test_a_copy_declared_independent_has_its_own_caps_and_budgets(cur: Curator) -> None:
    cur.add_analyst("a", "orig", epsilon=1)
    info = cur.register_dataset(
        "copy", with_dummy(people(range(3000))), SCHEMA, independent=True, max_epsilon=1
    )
    assert info["shares_budgets_of"] is None and info["independent"] is True
    assert cur.ledger.dataset("copy").independent is True  # recorded in the ledger
    with pytest.raises(ParameterError, match="no budget on dataset 'copy'"):
        cur.ledger.budget("a", "copy")
    assert cur.add_analyst("a", "copy", epsilon=1) is not None
    cur.query("a", COUNT.format("copy"), epsilon="1")
    assert cur.ledger.budget("a", "orig").spent_epsilon == 0
    assert cur.ledger.dataset("orig").spent_epsilon == 0
    assert cur.ledger.verify() == []


@pytest.mark.slow
def test_a_declaration_is_one_of_two_and_names_a_registered_dataset(cur: Curator) -> None:
    frame = with_dummy(people(range(3000)))
    with pytest.raises(ParameterError, match="independent must be left out"):
        cur.register_dataset("copy", frame, SCHEMA, independent=True, same_population_as="orig")
    with pytest.raises(ParameterError, match="same_population_as must be a registered dataset"):
        cur.register_dataset("copy", frame, SCHEMA, same_population_as="nope")
    assert [d.name for d in cur.ledger.datasets()] == ["orig"]


@pytest.mark.slow
def test_unrelated_datasets_share_only_when_declared(cur: Curator) -> None:
    """Other people entirely: registered without a word; declared, they share."""
    info = cur.register_dataset("apart", people(range(3000), "q"), SCHEMA)
    assert info["shares_budgets_of"] is None and info["independent"] is False
    info = cur.register_dataset(
        "joined", people(range(100), "z"), SCHEMA, same_population_as="orig"
    )
    assert info["shares_budgets_of"] == "orig"
    assert cur.ledger.group_members("orig") == ["joined", "orig"]


@pytest.mark.slow
@pytest.mark.parametrize(("common", "advised"), [(900, False), (2100, True)])
def test_the_advice_follows_the_share_of_common_units(
    cur: Curator, common: int, advised: bool
) -> None:
    """3000 units of which ``common`` are the original's (30% and 70%: far from 1/2 next
    to the estimator's ±0.06 at β = 1e-6 for y ≈ 2000 sampled units)."""
    frame = pd.concat([people(range(common)), people(range(3000 - common), "new")])
    if not advised:
        assert cur.register_dataset("other", frame, SCHEMA)["shares_budgets_of"] is None
        return
    with pytest.raises(ParameterError, match="--same-population-as orig") as refused:
        cur.register_dataset("other", frame, SCHEMA)
    # The owner is told the estimated share: 70% within the estimator's ±6%.
    shown = int(str(refused.value).split("about ")[1].split("%")[0])
    assert abs(shown - 70) <= 6


@pytest.mark.slow
def test_caps_of_a_sharing_dataset_are_refused_and_nothing_is_left(cur: Curator) -> None:
    with pytest.raises(ParameterError, match="shares its caps and budgets"):
        cur.register_dataset(
            "copy",
            with_dummy(people(range(3000))),
            SCHEMA,
            max_epsilon=5,
            same_population_as="orig",
        )
    assert [d.name for d in cur.ledger.datasets()] == ["orig"]
    tables = [r[0] for r in cur.backend.connect(read_only=True).execute("SHOW TABLES").fetchall()]
    assert "copy" not in tables


@pytest.mark.slow
def test_a_row_unit_dataset_is_never_advised(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    schema = one_table("t", {"x": {"type": "int"}})
    frame = pd.DataFrame({"x": list(range(100))})
    cur.register_dataset("one", frame, schema)
    info = cur.register_dataset("two", pd.concat([frame, frame.head(1)]), schema)
    assert info["shares_budgets_of"] is None


@pytest.mark.slow
def test_a_group_is_compared_as_the_union_of_its_datasets(cur: Curator) -> None:
    """Units 2/5 in orig and 2/5 in its group's other member, 4/5 in their union: advised."""
    more = pd.concat([people(range(2000)), people(range(1000), "m")])
    with pytest.raises(ParameterError, match="in dataset 'orig'"):  # 2/3 in orig
        cur.register_dataset("more", more, SCHEMA)
    info = cur.register_dataset("more", more, SCHEMA, same_population_as="orig")
    assert info["shares_budgets_of"] == "orig"
    assert cur.ledger.group_members("orig") == ["more", "orig"]
    frame = pd.concat(
        [people(range(1000), "m"), people(range(2000, 3000)), people(range(500), "r")]
    )
    with pytest.raises(ParameterError, match=r"of the units of 'third'") as refused:
        cur.register_dataset("third", frame, SCHEMA)
    # 2000 of its 2500 units are in the union: 80%, estimated from a salted sketch of 4096
    # hashes (about 2300 of them its own), so within Hoeffding's half-width at β = 1e-6
    # (Hoeffding 1963, Thm 1; Containment.error), plus one for the rounded percentage.
    half_width = 100 * Containment(0, 2000, exact=False).error(1e-6) + 1
    assert abs(float(refused.value.percent) - 80) <= half_width
    # Declared the same population as a member: the group is its root's.
    info = cur.register_dataset("third", frame, SCHEMA, same_population_as="more")
    assert info["shares_budgets_of"] == "orig"
    assert cur.ledger.group_members("more") == ["more", "orig", "third"]


# -- the estimator -------------------------------------------------------------------------------


def _h(i: int, key: bytes) -> int:
    """A keyed 64-bit hash: a stand-in for the database's salted hash."""
    return int.from_bytes(hashlib.blake2b(str(i).encode(), key=key, digest_size=8).digest(), "big")


@settings(max_examples=60, deadline=None)
@given(
    n_new=st.integers(1, 6000),
    n_old=st.integers(1, 6000),
    common_share=st.floats(0, 1),
    k=st.sampled_from([64, 256, 1024]),
    key=st.binary(min_size=8, max_size=8),
)
def test_containment_is_within_its_stated_bound(
    n_new: int, n_old: int, common_share: float, k: int, key: bytes
) -> None:
    """|ĉ − c| ≤ √(ln(2/β)/(2y)) (Hoeffding 1963, Thm 1) at β = 1e-9 (the bound fails with
    probability at most 1e-9 per example), against the exact containment |A∩B|/|A|."""
    common = min(int(common_share * n_new), n_old)
    new = range(0, n_new)
    old = range(n_new - common, n_new - common + n_old)
    exact = Fraction(common, n_new)
    est = containment(
        UnitSketch.of((_h(i, key) for i in new), k), UnitSketch.of((_h(i, key) for i in old), k)
    )
    if est.estimate is None:
        assert est.error(1e-9) == 1.0
        return
    assert abs(float(est.estimate - exact)) <= est.error(1e-9)
    if n_new + n_old - common <= k:
        assert est.exact and est.estimate == exact  # the sketches are the whole sets


@pytest.mark.slow  # statistical: many sketches
def test_the_estimate_is_unbiased_over_salts() -> None:
    """Over 200 salts the mean of ĉ is within 4 standard errors of the exact 0.3 (X is
    hypergeometric given Y: E[X/Y | Y] = c)."""
    rng = np.random.default_rng(7)
    ests = []
    for _ in range(200):
        key = rng.bytes(8)
        a = UnitSketch.of((_h(i, key) for i in range(2000)), 128)
        b = UnitSketch.of((_h(i, key) for i in range(1400, 5000)), 128)
        e = containment(a, b).estimate
        assert e is not None
        ests.append(float(e))
    mean, sd = float(np.mean(ests)), float(np.std(ests, ddof=1))
    assert abs(mean - 0.3) <= 4 * sd / np.sqrt(len(ests))


def test_the_bound_at_the_sketch_size_is_as_documented() -> None:
    assert round(Containment(4000, 4096, False).error(1e-6), 3) == 0.042
    assert Containment(1, 2, True).error() == 0.0
    assert Fraction(1, 2) == SHARE_THRESHOLD


def test_the_database_sketch_is_the_k_smallest_salted_hashes() -> None:
    """The sketch made in DuckDB equals the k smallest of every distinct salted hash read
    back in full (a second computation), ids compared as text."""
    con = duckdb.connect()
    con.execute("CREATE TABLE a AS SELECT range % 700 AS pid FROM range(2000)")
    con.execute("CREATE TABLE b AS SELECT CAST(range + 650 AS VARCHAR) AS pid FROM range(50)")
    got = sketch_units(con, [('"a"', "pid"), ('"b"', "pid")], "s4lt", k=300)
    every = con.execute(
        "SELECT hash(concat('s4lt', CAST(pid AS VARCHAR))) FROM a UNION "
        "SELECT hash(concat('s4lt', pid)) FROM b"
    ).fetchall()
    assert len(every) == 700  # ids 650..699 are in both tables
    assert got.hashes == tuple(sorted(int(r[0]) for r in every)[:300])
    other = sketch_units(con, [('"a"', "pid")], "other salt", k=300)
    assert set(other.hashes).isdisjoint(got.hashes)  # the salt changes every hash


@pytest.mark.slow
def test_neither_sketch_nor_salt_is_in_the_owner_output(cur: Curator, tmp_path: Path) -> None:
    with pytest.raises(ParameterError) as refused:
        cur.register_dataset("copy", with_dummy(people(range(3000))), SCHEMA)
    info = cur.register_dataset(
        "copy", with_dummy(people(range(3000))), SCHEMA, same_population_as="orig"
    )
    conn = sqlite3.connect(str(tmp_path / "s.duckdb.ledger"))
    salt = conn.execute("SELECT value FROM meta WHERE key = 'unit_salt'").fetchone()[0]
    blob = conn.execute("SELECT sketch FROM unit_sketches WHERE dataset = 'copy'").fetchone()[0]
    conn.close()
    text = repr(info) + str(refused.value)
    assert salt not in text
    assert all(str(h) not in text for h in UnitSketch.from_bytes(blob).hashes[:50])


@pytest.mark.slow
def test_the_cli_registers_declared_and_independent_datasets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``infodp dataset register`` refuses a likely copy without a declaration, records
    ``--same-population-as`` and ``--independent``; ``dataset list`` and ``show`` tell."""
    import json

    import yaml

    from infodp.cli import main

    schema = tmp_path / "s.yaml"
    schema.write_text(yaml.safe_dump(SCHEMA))
    files = [tmp_path / f"{n}.csv" for n in ("orig", "copy", "own", "again")]
    for extra, path in enumerate(files):  # the original, then with 1, 2, 3 more people
        pd.concat([people(range(800)), people(range(extra), "dummy")]).to_csv(path, index=False)
    orig, copy, own_copy, another = files
    db = str(tmp_path / "s.duckdb")
    argv = ["dataset", "register", "--db", db, "--schema", str(schema)]

    def register(name: str, source: Path, *flags: str) -> dict[str, object]:
        assert main([*argv, "--name", name, "--source", str(source), "--json", *flags]) == 0
        out: dict[str, object] = json.loads(capsys.readouterr().out)
        return out

    assert register("orig", orig)["shares_budgets_of"] is None
    assert main([*argv, "--name", "copy", "--source", str(copy)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--same-population-as orig" in err and "--independent" in err
    shared = register("copy", copy, "--same-population-as", "orig")
    assert shared["shares_budgets_of"] == "orig"
    assert str(shared["budgets"]).startswith("copy shares the caps and budgets of dataset orig")
    own = register("own", own_copy, "--independent")
    assert own["shares_budgets_of"] is None and own["independent"] is True
    # In both groups, most contained in own's (802 of its 803 units, orig's: 801).
    assert main([*argv, "--name", "again", "--source", str(another)]) != 0
    assert "--same-population-as own" in capsys.readouterr().err
    assert main(["dataset", "list", "--db", db, "--json"]) == 0
    listed = {d["name"]: d for d in json.loads(capsys.readouterr().out)["datasets"]}
    assert set(listed) == {"orig", "copy", "own"}
    assert listed["copy"]["shares_budgets_of"] == "orig" and listed["own"]["independent"]
    assert listed["orig"]["shares_budgets_of"] is None
    assert main(["dataset", "list", "--db", db]) == 0
    assert "copy: 801 rows, shares budgets of orig" in capsys.readouterr().out
    assert main(["dataset", "show", "copy", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shares_budgets_of"] == "orig"
    # A grant covers the dataset it names; on the copy too, the group's budget, no new key.
    add = ["analyst", "add", "--db", db, "--name", "a", "--epsilon", "1"]
    assert main([*add, "--dataset", "orig", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["api_key"]
    assert main(["query", "--db", db, "--analyst", "a", "--epsilon", "0.5", COUNT.format("copy")])
    assert "no budget on dataset 'copy'" in capsys.readouterr().err
    assert main([*add, "--dataset", "copy"]) == 0
    assert "no new key: a's key for the budget it shares covers copy" in capsys.readouterr().out


# -- populations of several tables ----------------------------------------------------------------

POPULATION = population(
    "pid",
    {
        "people": private(1, pid=TEXT, x=ints(0, 9)),
        "visits": private(5, pid=TEXT, cost=floats(0, 9)),
        "regions": public(region=TEXT),
    },
)


def _population(people_ids: range, visit_ids: range, prefix: str = "p") -> dict[str, object]:
    visits = pd.DataFrame({"pid": [f"{prefix}{i}" for i in visit_ids], "cost": 1.0})
    regions = pd.DataFrame({"region": ["n", "s"]})
    return {"people": people(people_ids, prefix), "visits": visits, "regions": regions}


@pytest.mark.slow
def test_a_population_is_sketched_over_the_union_of_its_private_tables(tmp_path: Path) -> None:
    """People 0..999 with visits of 1000..1999: a table of persons 500..1499 is wholly in the
    population (half from each private table) and is advised; its public table counts for
    nothing."""
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("clinic", _population(range(1000), range(1000, 2000)), POPULATION)
    cur.add_analyst("a", "clinic", epsilon=1)
    with pytest.raises(ParameterError, match="about 100% of the units of 'mixed'"):
        cur.register_dataset("mixed", people(range(500, 1500)), SCHEMA)
    info = cur.register_dataset(
        "mixed", people(range(500, 1500)), SCHEMA, same_population_as="clinic"
    )
    assert info["shares_budgets_of"] == "clinic"
    assert cur.add_analyst("a", "mixed", epsilon=1) is None
    cur.query("a", COUNT.format("mixed"), epsilon="0.5")
    assert cur.ledger.budget("a", "clinic").spent_epsilon == Fraction(1, 2)
    # A copy of the whole population with one more person is advised too.
    copy = _population(range(1001), range(1000, 2000))
    with pytest.raises(ParameterError, match="in dataset 'clinic'"):
        cur.register_dataset("again", copy, POPULATION)
    # Another population with none of these people is not.
    other = _population(range(1000), range(1000, 2000), prefix="q")
    assert cur.register_dataset("other", other, POPULATION)["shares_budgets_of"] is None
    assert cur.ledger.verify() == []


@pytest.mark.slow
def test_two_copies_of_a_store_in_one_process_keep_their_own_budget_groups(
    cur: Curator, tmp_path: Path
) -> None:
    # Copies of one store carry one store id; in each, "copy" is registered differently (in
    # the group of "orig" in A, on its own in B). A process holding both must read each
    # copy's own membership, not the one it met first.
    cur.close()
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        for f in tmp_path.glob("s.duckdb*"):
            (tmp_path / side / f.name).write_bytes(f.read_bytes())
    a = Curator(tmp_path / "a" / "s.duckdb")
    b = Curator(tmp_path / "b" / "s.duckdb")
    a.register_dataset("copy", with_dummy(people(range(3000))), SCHEMA, same_population_as="orig")
    b.register_dataset("copy", with_dummy(people(range(3000))), SCHEMA, independent=True)
    for c in (a, b):
        c.add_analyst("x", "copy", epsilon=1)
    a.query("x", COUNT.format("copy"), epsilon="0.25")
    b.query("x", COUNT.format("copy"), epsilon="0.25")
    assert a.ledger.dataset("copy").budget_group == "orig"
    assert b.ledger.dataset("copy").budget_group is None
    assert [e.dataset for e in b.ledger.entries()] == ["copy"]
    a.close()
    b.close()
