"""The curator's CLI forms , run through ``infodp.cli.main`` with capsys."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from _cli_errors import json_error
from _cli_store import PEOPLE_SCHEMA, PeopleFiles, RegisterStore
from infodp.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_issue_cli_forms(capsys: pytest.CaptureFixture[str], people_files: PeopleFiles) -> None:
    db = people_files.db
    register = ["dataset", "register", "--db", db, "--name", "people"]
    files = ["--source", people_files.source, "--schema", people_files.schema]
    code, out, _ = run(capsys, *register, *files)
    assert code == 0 and "400 rows" in out
    add = ["analyst", "add", "--db", db, "--dataset", "people", "--epsilon", "1"]
    code, out, _ = run(capsys, *add, "--name", "ALICE", "--delta", "1e-6", "--json")
    assert code == 0
    key = json.loads(out)["api_key"]
    assert len(key) >= 40
    code, out, _ = run(capsys, *add, "--name", "BOB")
    assert code == 0 and "API key" in out  # printed once, for people too
    sql = "SELECT region, COUNT(*), AVG(income) FROM people GROUP BY region"
    code, out, _ = run(
        capsys, "query", "--db", db, "--analyst", "ALICE", "--epsilon", "0.1", sql, "--json"
    )
    assert code == 0
    payload = json.loads(out)  # exactly one JSON object
    assert {"columns", "rows", "confidence_intervals", "cost", "remaining"} <= set(payload)
    assert payload["columns"] == ["region", "COUNT(*)", "AVG(income)"]
    # One renderer: the answer printed is, byte for byte, the copy the ledger stored.
    from infodp.curator.ledger import Ledger

    stored = Ledger(db + ".ledger").entry(payload["entry"]).result_json
    assert stored == out.rstrip("\n")
    assert len(payload["rows"]) == 4
    assert payload["remaining"]["exact"]["spent_epsilon"] == "1/10"
    code, out, _ = run(capsys, "query", "--db", db, "--analyst", "ALICE", "--epsilon", "0.1", sql)
    assert code == 0 and "per person: α = 1: ≤ " in out and "left: ε " in out
    # over budget: exit 3 with requested, remaining and gap
    code, _, err = run(capsys, "query", "--db", db, "--analyst", "ALICE", "--epsilon", "0.9", sql)
    assert code == 3
    assert "requested epsilon=0.9" in err and "remaining epsilon=0.8" in err
    assert "short by epsilon=0.1" in err and err.count("\n") == 1
    code, out, _ = run(capsys, "ledger", "--db", db, "--json")
    ledger = json.loads(out)
    assert code == 0 and ledger["consistent"] and len(ledger["entries"]) == 2
    assert ledger["entries"][0]["sql"] == sql and ledger["entries"][0]["analyst"] == "ALICE"
    code, out, _ = run(capsys, "ledger", "--db", db)
    assert code == 0 and "ALICE" in out


@pytest.mark.slow
def test_release_and_synopsis_query(
    capsys: pytest.CaptureFixture[str], registered_store: RegisterStore
) -> None:
    db = registered_store(analysts={"A": ["--epsilon", "1"]}).db
    code, out, _ = run(
        capsys,
        "release",
        "--db",
        db,
        "--analyst",
        "A",
        "--dataset",
        "people",
        "--columns",
        "age,region",
        "--epsilon",
        "0.5",
        "--name",
        "ar",
        "--json",
    )
    assert code == 0 and json.loads(out)["cells"] == 121 * 4
    for _ in range(2):
        code, out, _ = run(
            capsys,
            "query",
            "--db",
            db,
            "--synopsis",
            "ar",
            "SELECT COUNT(*) FROM people WHERE age BETWEEN 30 AND 40",
            "--json",
        )
        assert code == 0 and json.loads(out)["cost"]["epsilon"] == 0.0
    code, out, _ = run(capsys, "analyst", "list", "--db", db, "--json")
    assert json.loads(out)["analysts"][0]["spent_epsilon"] == 0.5


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["query", "--analyst", "A", "--epsilon", "-1", "SELECT COUNT(*) FROM people"], "epsilon"),
        (["query", "--analyst", "A", "--epsilon", "nan", "SELECT COUNT(*) FROM people"], "epsilon"),
        (["query", "--analyst", "A", "--epsilon", "0.1", "SELECT age FROM people"], "raw column"),
        (
            ["query", "--analyst", "A", "--epsilon", "0.1", "SELECT COUNT(*) FROM x"],
            "unknown dataset",
        ),
        (["query", "--analyst", "A", "--epsilon", "0.1", "SELECT SUM(zip) FROM people"], "zip"),
        (["query", "--epsilon", "0.1", "SELECT COUNT(*) FROM people"], "--analyst"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str],
    registered_store: RegisterStore,
    args: list[str],
    needle: str,
) -> None:
    db = registered_store(analysts={"A": ["--epsilon", "1"]}).db
    code, out, err = run(capsys, *args[:1], "--db", db, *args[1:])
    assert code == 2 and out == ""
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_register_refuses_missing_schema_and_nulls(
    capsys: pytest.CaptureFixture[str], people_files: PeopleFiles, tmp_path: Path
) -> None:
    register = ["dataset", "register", "--db", people_files.db, "--name", "people"]
    register += ["--source", people_files.source]
    code, _, err = run(capsys, *register, "--schema", str(tmp_path / "none.yaml"))
    assert code == 2 and "--schema" in err
    strict = tmp_path / "strict.yaml"
    strict.write_text(PEOPLE_SCHEMA.replace(", nulls: drop", ""))
    code, _, err = run(capsys, *register, "--schema", str(strict))
    assert code == 2 and "income" in err and "nulls: drop" in err


@pytest.mark.slow
def test_register_drops_rows_without_an_id_when_declared(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    frame = pd.DataFrame(
        {"person_id": ["a", None, "b", None, "c", "d"], "age": [30, 99, 41, 99, 52, 63]}
    )
    frame.to_csv(tmp_path / "p.csv", index=False)
    schema = "table: p\nprivacy_unit: person_id\ncolumns:\n  age: {type: int, bounds: [0, 120]}\n"
    (tmp_path / "strict.yaml").write_text(schema)
    dropping = schema + "  person_id: {type: text, nulls: drop}\n"
    (tmp_path / "drop.yaml").write_text(dropping)
    register = ["dataset", "register", "--source", str(tmp_path / "p.csv"), "--name", "p"]
    db = str(tmp_path / "s.duckdb")
    code, out, err = run(capsys, *register, "--db", db, "--schema", str(tmp_path / "strict.yaml"))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "privacy_unit column 'person_id' holds NULL values" in err
    assert "Declare the id column's null policy 'nulls: drop'" in err
    code, out, _ = run(capsys, *register, "--db", db, "--schema", str(tmp_path / "drop.yaml"))
    want = int(frame["person_id"].isna().sum())
    assert code == 0 and f"registered p: {len(frame) - want} rows" in out
    assert f"{want} rows dropped: their person_id is NULL (the id column's nulls: drop)" in out
    db2 = str(tmp_path / "s2.duckdb")
    code, out, _ = run(
        capsys, *register, "--db", db2, "--schema", str(tmp_path / "drop.yaml"), "--json"
    )
    assert code == 0 and json.loads(out)["null_ids_dropped"] == want


@pytest.mark.slow
def test_analyst_add_in_accountant_currencies(
    capsys: pytest.CaptureFixture[str], registered_store: RegisterStore
) -> None:
    db = registered_store(analysts={}).db
    add = ["analyst", "add", "--db", db, "--dataset", "people"]
    code, out, _ = run(capsys, *add, "--name", "N", "--currency", "nats", "--nats", "0.01",
                       "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["budget"]["currency"] == "nats"
    code, out, _ = run(capsys, *add, "--name", "P", "--currency", "approx", "--epsilon", "1",
                       "--delta", "1e-6", "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["budget"]["accountant"]["budget"]["currency"] == "approx"
    sql = "SELECT COUNT(*) FROM people"
    assert run(capsys, "query", "--db", db, "--analyst", "N", "--epsilon", "0.1", sql)[0] == 0
    assert run(capsys, "query", "--db", db, "--analyst", "N", "--epsilon", "0.1", sql)[0] == 0
    code, _, err = run(capsys, "query", "--db", db, "--analyst", "N", "--epsilon", "0.1", sql)
    assert code == 3 and "nats" in err
    code, _, err = run(capsys, *add, "--name", "Q", "--currency", "pure", "--epsilon", "abc")
    assert code == 2 and "--epsilon" in err


@pytest.mark.slow
def test_analyst_add_with_an_rdp_budget_is_enforced(
    capsys: pytest.CaptureFixture[str], registered_store: RegisterStore
) -> None:
    db = registered_store(analysts={}).db
    code, out, _ = run(capsys, "analyst", "add", "--db", db, "--name", "R", "--dataset",
                       "people", "--currency", "rdp", "--orders", "2,8",
                       "--rdp-epsilons", "0.05,0.2", "--json")  # fmt: skip
    budget = json.loads(out)["budget"]["accountant"]["budget"]
    assert code == 0 and budget == {
        "currency": "rdp",
        "orders": [2.0, 8.0],
        "epsilons": [0.05, 0.2],
    }
    # Each ε = 0.1 query has a positive RDP cost at orders 2 and 8 (about α·ε²/2 for small ε),
    # so the budget admits a handful of them; the accountant must refuse well before 50.
    sql = "SELECT COUNT(*) FROM people"
    codes = []
    for _ in range(50):
        code, _, err = run(capsys, "query", "--db", db, "--analyst", "R", "--epsilon", "0.1", sql)
        codes.append(code)
        if code != 0:
            break
    assert codes[0] == 0 and codes[-1] == 3 and "exceeded" in err
    code, _, err = run(capsys, "analyst", "add", "--db", db, "--name", "S", "--dataset",
                       "people", "--currency", "rdp", "--orders", "2")  # fmt: skip
    assert code == 2 and "--rdp-epsilons" in err


@pytest.mark.slow
def test_gaussian_noise_zcdp_budget_and_accuracy_first(
    capsys: pytest.CaptureFixture[str], registered_store: RegisterStore
) -> None:
    store = registered_store(analysts={"Z": ["--currency", "zcdp", "--rho", "0.05"]})
    db = store.db
    assert store.keys["Z"]
    code, _, err = run(capsys, "analyst", "add", "--db", db, "--name", "Y", "--dataset",
                       "people", "--currency", "zcdp")  # fmt: skip
    assert code == 2 and "--rho" in err
    sql = "SELECT COUNT(*) FROM people"
    code, out, _ = run(capsys, "query", "--db", db, "--analyst", "Z", "--epsilon", "0.5",
                       "--delta", "1e-6", "--noise", "gaussian", sql, "--json")  # fmt: skip
    assert code == 0
    part = json.loads(out)["cost"]["measurements"][0]
    assert part["mechanism"] == "discrete_gaussian"
    # Gaussian noise needs δ > 0: refused before anything is spent (one line, exit 2)
    code, _, err = run(capsys, "query", "--db", db, "--analyst", "Z", "--epsilon", "0.5",
                       "--noise", "gaussian", sql)  # fmt: skip
    assert code == 2 and "delta" in err
    # accuracy first: the ε whose 95% interval is ±10, nothing spent without --analyst
    code, out, _ = run(capsys, "query", "--db", db, "--accuracy", "10", sql, "--json")
    assert code == 0
    plan = json.loads(out)
    eps = float(Fraction(plan["epsilon"]))
    assert plan["accuracy"][0]["halfwidth"] <= 10
    # discrete Laplace of scale 1/ε: P(|Y| > 10) = 2q^11/(1 + q) ≤ 5% (closed form)
    q = math.exp(-eps)
    assert 2 * q**11 / (1 + q) <= 0.05


def test_with_json_a_failure_is_one_json_object_too(
    capsys: pytest.CaptureFixture[str], registered_store: RegisterStore
) -> None:
    # docs/architecture.md: with --json a sub-command prints exactly one JSON object, a failure
    # included;
    # the stderr line and the exit status stay as without --json.
    db = registered_store(analysts={"A": ["--epsilon", "1"]}).db
    sql = "SELECT COUNT(*) FROM people"

    def failure(*args: str) -> tuple[int, dict[str, object], str]:
        code, out, err = run(capsys, *args)
        return code, json_error(out, err, code), err

    # a refused spend: exit 3, what was asked, what is left, by how much
    code, error, _ = failure("query", "--db", db, "--analyst", "A", "--epsilon", "2", sql, "--json")
    assert code == 3 and error["kind"] == "budget_exceeded"
    assert str(error["requested"]).startswith("epsilon=2,")
    assert str(error["remaining"]).startswith("epsilon=1,")
    assert str(error["short_by"]).startswith("epsilon=1")
    # a bad parameter names the argument
    code, error, _ = failure("query", "--db", db, "--analyst=A", "--epsilon", "-1", "--json", sql)
    assert code == 2 and error["kind"] == "parameter" and error["argument"] == "epsilon"
    # a bad flag (click's usage error), on one line
    code, error, _ = failure("query", "--db", db, "--json", "--noise", "cauchy", sql)
    assert code == 2 and error["kind"] == "usage" and "cauchy" in str(error["message"])
    # after "--" a "--json" is an argument, not the flag: no JSON then
    code, out, _ = run(capsys, "divergence", "--", "--json")
    assert code == 2 and out == ""


# -- commands that only read never create files ----------------------------------------------


def _store_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("typo"))


@pytest.mark.parametrize(
    "args",
    [
        ["dataset", "list"],
        ["analyst", "list"],
        ["ledger"],
        ["ledger", "verify"],
        ["analyst", "add", "--name", "ann", "--dataset", "people", "--epsilon", "1"],
        ["query", "--analyst", "ann", "--epsilon", "0.1", "SELECT COUNT(*) FROM people"],
        [
            "release",
            "--analyst",
            "ann",
            "--dataset",
            "people",
            "--columns",
            "age",
            "--epsilon",
            "0.1",
            "--name",
            "s",
        ],
    ],
    ids=[
        "dataset-list",
        "analyst-list",
        "ledger",
        "ledger-verify",
        "analyst-add",
        "query",
        "release",
    ],
)
def test_command_on_a_mistyped_store_fails_and_creates_no_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str]
) -> None:
    db = str(tmp_path / "typo.duckdb")
    for as_json in ([], ["--json"]):
        code, out, err = run(capsys, *args, "--db", db, *as_json)
        assert code == 2, (out, err)
        assert "Traceback" not in err and "existing infodp store" in err
        assert _store_files(tmp_path) == []


@pytest.mark.slow
def test_failed_registration_leaves_no_store_behind(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = str(tmp_path / "typo.duckdb")
    csv = tmp_path / "people.csv"
    pd.DataFrame({"person_id": [1, 2], "age": [30, 40]}).to_csv(csv, index=False)
    schema = tmp_path / "schema.yaml"
    schema.write_text(PEOPLE_SCHEMA)  # declares columns the file lacks
    files = ["--name", "people", "--source", str(csv), "--schema", str(schema)]
    code, _, err = run(capsys, "dataset", "register", "--db", db, *files)
    assert code == 2 and "Traceback" not in err and "not in the source" in err
    assert _store_files(tmp_path) == []
    # Nor the directories it would have made for a new store.
    deep = str(tmp_path / "new" / "dirs" / "typo.duckdb")
    code, _, err = run(capsys, "dataset", "register", "--db", deep, *files)
    assert code == 2 and "Traceback" not in err
    assert not (tmp_path / "new").exists()


def test_failed_registration_into_an_existing_store_keeps_it(
    capsys: pytest.CaptureFixture[str], registered_store: RegisterStore
) -> None:
    store = registered_store(analysts={})  # "people", registered
    db = store.db
    args = ["dataset", "register", "--db", db, "--source", store.source, "--schema", store.schema]
    # The same name again fails; the store and its first dataset stay as they were.
    code, _, err = run(capsys, *args, "--name", "people")
    assert code == 2 and "Traceback" not in err
    code, out, _ = run(capsys, "dataset", "list", "--db", db, "--json")
    assert code == 0 and [d["name"] for d in json.loads(out)["datasets"]] == ["people"]


@pytest.mark.slow
def test_ledger_times_are_shown_to_the_second(
    capsys: pytest.CaptureFixture[str], registered_store: RegisterStore
) -> None:
    import re

    db = registered_store(analysts={"ann": ["--epsilon", "1"]}).db
    q = ["query", "--db", db, "--analyst", "ann", "--epsilon", "0.1", "SELECT COUNT(*) FROM people"]
    assert run(capsys, *q)[0] == 0
    syn = ["release", "--db", db, "--analyst", "ann", "--dataset", "people", "--columns", "age"]
    assert run(capsys, *syn, "--epsilon", "0.1", "--name", "ages")[0] == 0
    code, out, _ = run(capsys, "ledger", "--db", db, "--json")
    entries = json.loads(out)["entries"]
    synopses = json.loads(out)["synopses"]
    assert code == 0 and len(entries) == 2  # the query and the synopsis's release
    whole_second = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$")
    for entry in entries:
        assert whole_second.match(entry["created"]) and whole_second.match(entry["finished"])
    assert [x["name"] for x in synopses] == ["ages"] and whole_second.match(synopses[0]["created"])
    code, out, _ = run(capsys, "ledger", "--db", db)
    assert code == 0 and not re.search(r"\d\d:\d\d:\d\d\.\d", out)


FORGED_NAMES = [
    "eve\nalice on people: remaining epsilon=1000",  # a newline forges a listing line
    "<script>alert(1)</script>",
    "eve alice",
    " eve",
    "",
    "a" * 65,
    "ev\u00e9",  # outside ASCII
    "-eve",  # would read as an option
]


@pytest.mark.parametrize("name", FORGED_NAMES)
def test_analyst_names_outside_the_safe_charset_are_refused(
    capsys: pytest.CaptureFixture[str], registered_store: RegisterStore, name: str
) -> None:
    from infodp._validate import ANALYST_NAME_RULE
    from infodp.curator.engine import Curator
    from infodp.errors import ParameterError

    db = registered_store(analysts={}).db
    # The CLI refuses it before opening the store: one line, status 2, the rule stated.
    code, _, err = run(
        capsys, "analyst", "add", "--db", db, "--name", name, "--dataset", "people",
        "--epsilon", "1",
    )  # fmt: skip
    assert code == 2 and ANALYST_NAME_RULE in err and "Traceback" not in err
    assert err.count("\n") == 1  # the name's newline is shown escaped, not printed
    # The library refuses it too (the HTTP service and every other caller go through it).
    cur = Curator(db)
    with pytest.raises(ParameterError) as refused:
        cur.add_analyst(name, "people", epsilon=1)
    assert refused.value.argument == "name"
    assert cur.ledger.budgets() == []
    cur.close()
    code, out, _ = run(capsys, "analyst", "list", "--db", db)
    assert code == 0 and out.strip() == "no analysts"


def test_analyst_names_in_the_safe_charset_are_accepted(
    capsys: pytest.CaptureFixture[str], registered_store: RegisterStore
) -> None:
    db = registered_store(analysts={}).db
    for name in ("alice", "Bob_2", "c.d@example.org", "x-y", "9" * 64):
        code, _, err = run(
            capsys, "analyst", "add", "--db", db, "--name", name, "--dataset", "people",
            "--epsilon", "1",
        )  # fmt: skip
        assert code == 0, err
    code, out, _ = run(capsys, "analyst", "list", "--db", db)
    assert code == 0 and len(out.strip().splitlines()) == 5


@pytest.mark.slow
def test_an_unbounded_information_names_its_real_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # public_rows is declared: a grouped query over a text key is unbounded because of the
    # key set partition selection releases, not for want of a row bound.
    n = 600
    csv = tmp_path / "t.csv"
    pd.DataFrame({"city": ["a", "b", "c"] * (n // 3), "x": [1, 2, 3] * (n // 3)}).to_csv(
        csv, index=False
    )
    for name, bound in (("bounded", f"public_rows: {n}\n"), ("open", "")):
        schema = tmp_path / f"{name}.yaml"
        schema.write_text(
            f"table: {name}\nprivacy_unit: row\n{bound}columns:\n"
            "  city: {type: text}\n  x: {type: int, bounds: [0, 5]}\n"
        )
        db = str(tmp_path / f"{name}.duckdb")
        code, _, _ = run(
            capsys, "dataset", "register", "--db", db, "--name", name,
            "--source", str(csv), "--schema", str(schema),
        )  # fmt: skip
        assert code == 0
        add = ["analyst", "add", "--db", db, "--dataset", name, "--name", "A"]
        assert run(capsys, *add, "--epsilon", "5", "--delta", "1e-3")[0] == 0
        query = ["query", "--db", db, "--analyst", "A", "--epsilon", "1"]
        grouped = f"SELECT city, COUNT(*) FROM {name} GROUP BY city"
        code, out, _ = run(capsys, *query, "--delta", "1e-5", grouped)
        assert code == 0
        assert (
            "about the whole table: not bounded (the key set DP partition selection releases "
            "is not covered by this bound)" in out
        )
        assert "no public row bound declared" not in out
        code, out, _ = run(capsys, *query, f"SELECT COUNT(*) FROM {name}")
        assert code == 0
        if bound:
            assert "about the whole table ≤ " in out
        else:
            assert "about the whole table: not bounded (no public row bound declared)" in out
