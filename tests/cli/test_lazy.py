"""The CLI starts instantly: sub-command modules and heavy libraries load only when used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

from _stores import cats, floats, one_table
from infodp.cli import LAZY_COMMANDS, cli

# Each test starts a fresh interpreter to see what it imports: slow.
pytestmark = pytest.mark.slow

HEAVY = ("numpy", "scipy", "matplotlib", "duckdb", "pandas", "rich", "fastapi", "sqlglot")
#: The HTTP service's libraries: a query process answers without them.
_WEB = ("fastapi", "starlette", "pydantic", "httpx", "uvicorn")


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_help_imports_nothing_heavy() -> None:
    loaded = _modules_after(
        "from infodp.cli import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()): main(['--help'])"
    )
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}
    assert not {m for m in loaded if m.startswith("infodp.cli.") and m != "infodp.cli._common"}


def test_lazy_table_names_real_commands() -> None:
    ctx = click.Context(cli)
    for name, (_module, _attr, short) in LAZY_COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
        assert short.endswith(".") and len(short) <= 70
    assert cli.get_command(ctx, "no-such-command") is None


def test_help_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "infodp.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for name, (_m, _a, short) in LAZY_COMMANDS.items():
        assert f"  {name}" in out and short in out


@pytest.mark.parametrize(
    ("sql", "arrays"),
    [
        ("SELECT g, COUNT(*) FROM t GROUP BY g", False),
        ("SELECT g, SUM(v) FROM t GROUP BY g", False),
        # An AVG's interval inverts the exact law of S̃ − μ·C̃, a convolution of the two noises'
        # laws (infodp.mechanisms.error_law, on numpy alone); still no scipy, pandas or plots.
        ("SELECT g, COUNT(*), AVG(v) FROM t GROUP BY g", True),
        ("SELECT g, COUNT(*), AVG(v), SUM(v) FROM t GROUP BY g", True),
    ],
)
def test_a_laplace_query_loads_no_numpy_scipy_pandas_or_plotting(
    tmp_path: Path, sql: str, arrays: bool
) -> None:
    # The whole-process query path (parse, plan, leakage summary, check, noise, answer) runs
    # on sqlglot and duckdb alone: scipy alone once cost more start-up than the aggregate
    # itself, and numpy ~45 ms. A pure-ε query's leakage at α = 1, 2, ∞ and its δ(0) (the
    # attacker's success) are closed forms on floats (infodp.accounting.rdp, .hockey), and a
    # few cells of exact discrete Laplace noise come from the scalar sampler.
    from infodp.curator import Curator

    db = tmp_path / "s.duckdb"
    cur = Curator(db)
    schema = one_table("t", {"g": cats("a", "b"), "v": floats(0, 100000)})
    cur.register_dataset("t", str(_csv(tmp_path)), schema)
    cur.add_analyst("a", "t", epsilon=10)
    cur.close()
    loaded = _modules_after(
        "from infodp.cli import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['query', '--db', {str(db)!r}, '--analyst', 'a', '--epsilon', '1',"
        f" {sql!r}, '--json'])\n"
        "assert code == 0, code"
    )
    assert "infodp.curator.engine" in loaded
    heavy = ("scipy", "pandas", "polars", "pyarrow", "matplotlib", *_WEB)
    heavy += () if arrays else ("numpy",)
    assert not {m for m in loaded if m.split(".")[0] in heavy}
    # Nor the modules a one-shot COUNT/SUM/AVG never uses: synopses (published histograms),
    # the Spark backend, the HTTP service, the HTML report, the information measures (the δ
    # of a mutual-information bound is not part of a query's price), the data owner's budget
    # sharing (unit sketches, grants) and the relations of joins and subqueries (a plain
    # single-table query reads one stored table).
    unused = {
        "infodp.curator.publish.synopsis",
        "infodp.curator.backends.spark",
        "infodp.server",
        "infodp.explain.html",
        "infodp.information.entropy",
        "infodp.information.divergence",
        "infodp.curator.store.shared_budgets",
        "infodp.curator.store.unit_overlap",
        "infodp.curator.ledger.grants",
        "infodp.curator.relations.joins",
        "infodp.curator.relations.sources",
        "infodp.curator.relations.relation",
        "infodp.curator.relations.query",
        # Nor what only some queries, the data owner or another ledger need: the free
        # post-processing (HAVING, ORDER BY, LIMIT, computed items) and a relation's values,
        # registration and the copies it makes, estimates and non-interactive releases, a
        # PostgreSQL ledger, API keys, leases, stored synopses, a declaration file and an
        # information price (no public row bound is declared here). Nor the other curator
        # commands' module (their click options).
        "infodp.cli.curator",
        "infodp.curator.sql.post.process",
        "infodp.curator.sql.post.terms",
        "infodp.curator.sql.post.enclosure",
        "infodp.curator.relations.values",
        "infodp.curator.relations.boxes",
        "infodp.curator.store.registration",
        "infodp.curator.backends.duckdb_copy",
        "infodp.curator.backends.public",
        "infodp.curator.price.estimate",
        "infodp.curator.publish.synthetic",
        "infodp.curator.publish.synopsis_release",
        "infodp.curator.ledger.postgres",
        "infodp.curator.ledger.keys",
        "infodp.curator.ledger.leases",
        "infodp.curator.ledger.synopses",
        "infodp.curator.declaration.source",
        "infodp.curator.rules.budget_info",
    }
    if "AVG" not in sql:  # only an AVG's interval inverts a combination of noises
        unused |= {"infodp.curator.rules.intervals", "infodp.mechanisms.error_law"}
    if not arrays:  # δ(0) from the RDP curve (accounting.conversions) is computed on arrays
        unused.add("infodp.accounting.conversions")
    assert not unused & loaded
    assert not {m for m in loaded if m.startswith("infodp.server.")}


def _csv(directory: Path) -> Path:
    path = directory / "t.csv"
    path.write_text("g,v\n" + "".join(f"{'ab'[i % 2]},{i * 37 % 100000}\n" for i in range(500)))
    return path
