"""CLI of the HTTP service: ``serve``, plus ``analyst key`` / ``analyst revoke`` / ``analyst keys``.

Key management is admin-only and local (it needs the store files), never over HTTP:

* ``infodp analyst add`` (the curator's command) prints a ledger key that the service accepts;
* ``infodp analyst key --name ALICE`` issues a server key ``idp_<id>.<secret>`` (found by id);
* ``infodp analyst revoke --name ALICE [--key-id ID]`` revokes keys (all of them by default,
  the ledger key included); the running service refuses them at the next request.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from pathlib import Path
from typing import Any

import click

from infodp.cli._common import emit, json_option, spark_options
from infodp.cli.curator import analyst as analyst_group
from infodp.cli.curator import db_option
from infodp.errors import InternalError, ParameterError

__all__ = ["COMMANDS"]


def _existing_store(db: str) -> str:
    if not Path(db).is_file():
        raise ParameterError("--db", db, "an existing infodp store (register a dataset first)")
    return db


def _workers(n: int) -> int:
    if n < 0 or n > 256:
        raise ParameterError("--workers", n, "a number of worker processes in [0, 256]")
    return n


def _duckdb_threads(n: int) -> int | None:
    """``--duckdb-threads``: None (DuckDB's default, every core) for 0."""
    if n < 0 or n > 1024:
        raise ParameterError(
            "--duckdb-threads", n, "a number of threads in [0, 1024] (0: all cores)"
        )
    return n or None


def _listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (as uvicorn binds it); a port in use or an
    address not of this machine is a :class:`ParameterError` naming the option."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        reason = err.strerror or type(err).__name__
        if isinstance(err, socket.gaierror) or err.errno == errno.EADDRNOTAVAIL:
            raise ParameterError("--host", host, f"an address of this machine ({reason})") from None
        raise ParameterError(
            "--port", port, f"a free TCP port on {host} that this user may bind ({reason})"
        ) from None
    sock.set_inheritable(True)
    return sock


def _known_analyst(db: str, name: str) -> None:
    from infodp.server.auth import KeyStore, key_store_path

    names = {b.analyst for b in KeyStore(key_store_path(db)).ledger.budgets()}
    if name not in names:
        raise ParameterError(
            "--name", name, "an analyst with a budget (add one with 'infodp analyst add')"
        )


@click.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="TCP port (0: any free port).",
)
@click.option(
    "--rate",
    type=float,
    default=50.0,
    show_default=True,
    help="Requests per second allowed per analyst, shared by all of their API keys (token bucket).",
)
@click.option("--burst", type=int, default=100, show_default=True, help="Bucket size per analyst.")
@click.option(
    "--max-body",
    type=int,
    default=64 * 1024,
    show_default=True,
    help="Largest request body in bytes (413 above).",
)
@click.option(
    "--admin-token-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="File holding the admin token for /v1/admin/* (mode 0600; or set $INFODP_ADMIN_TOKEN; "
    "disabled without either).",
)
@click.option(
    "--keep-open/--open-per-query",
    default=True,
    show_default=True,
    help="Keep each worker's read-only store connection open (faster); datasets registered "
    "meanwhile are served after a restart.",
)
@click.option(
    "--max-concurrent",
    default=1,
    show_default=True,
    help="Most queries/estimates/synopsis requests in flight per analyst, shared by all of "
    "their API keys (the rest wait; 429 beyond).",
)
@click.option(
    "--query-timeout",
    default=30.0,
    show_default=True,
    help="Seconds after which a running query is interrupted (its cost stays spent).",
)
@click.option(
    "--answer-time",
    type=float,
    default=1.0,
    show_default=True,
    help="Seconds per table a query reads after which its answer is released, and not "
    "before, so the time of an answer does not depend on the data (Haeberlen, Pierce & "
    "Narayan 2011); a query still running then yields its default outcome (its answer on the "
    "empty dataset, same status and charge). Size it above the slowest query; 0: no padding.",
)
@click.option(
    "--spark-answer-time",
    type=float,
    default=15.0,
    show_default=True,
    help="--answer-time for datasets on the Spark backend (the first query also starts the "
    "Spark session: size it for that, or expect that query's default outcome).",
)
@click.option(
    "--workers",
    type=int,
    default=None,
    help="Worker processes running the CPU-heavy part of queries, estimates and synopsis "
    "queries, so one analyst's heavy work does not slow the others down (default: one per "
    "core, at least 2; 0: everything in the server process).",
)
@click.option(
    "--duckdb-threads",
    type=int,
    default=1,
    show_default=True,
    help="DuckDB threads per query: 1 keeps a query on one core, so analysts running at once "
    "do not slow each other down; 0: all of the machine's cores for every query (faster for "
    "one analyst at a time, e.g. a heavy join).",
)
@click.option(
    "--reservation-lease",
    type=float,
    default=None,
    help="With a PostgreSQL ledger shared by a fleet: seconds after which a reservation still "
    "open is settled by any server, its cost spent (its server died; default: twice "
    "--query-timeout plus 30 s). See docs/deployment.md.",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
    help="Server log verbosity (uvicorn).",
)
@spark_options
@json_option
def serve(
    db: str,
    host: str,
    port: int,
    rate: float,
    burst: int,
    max_body: int,
    admin_token_file: str | None,
    keep_open: bool,
    max_concurrent: int,
    query_timeout: float,
    answer_time: float,
    spark_answer_time: float,
    workers: int | None,
    duckdb_threads: int,
    reservation_lease: float | None,
    log_level: str,
    spark_master: str | None,
    spark_conf: tuple[str, ...],
    as_json: bool,
) -> None:
    """Serve the curator over HTTP (FastAPI on uvicorn); OpenAPI at /v1/openapi.json.

    With --json, one JSON object describing the service is printed on stdout when it starts
    (logs go to stderr and the access log is off, so stdout holds only that object).
    """
    import uvicorn

    from infodp._validate import as_positive, as_positive_int
    from infodp.curator.backends.spark import spark_settings
    from infodp.server import log_setup
    from infodp.server.app import (
        ServerSettings,
        admin_token_hash,
        admin_token_hash_from_env,
        create_app,
    )
    from infodp.server.pool import default_workers
    from infodp.server.protocol import HEADER_TIMEOUT, MAX_HALF_OPEN, guarded_http
    from infodp.server.timing import check_answer_time

    # Checked now (the session itself starts at the first query on a Spark dataset); the
    # store's <db>.spark.toml is read then, as by ``infodp query``.
    spark_settings(None, master=spark_master, conf=spark_conf)
    settings = ServerSettings(
        db=_existing_store(db),
        rate=as_positive("--rate", rate),
        burst=as_positive_int("--burst", burst),
        max_body_bytes=as_positive_int("--max-body", max_body),
        admin_token_sha256=admin_token_hash_from_env()
        if admin_token_file is None
        else admin_token_hash(admin_token_file),
        keep_open=keep_open,
        max_concurrent_per_analyst=as_positive_int("--max-concurrent", max_concurrent),
        query_timeout=as_positive("--query-timeout", query_timeout),
        answer_time=check_answer_time("--answer-time", answer_time),
        spark_answer_time=check_answer_time("--spark-answer-time", spark_answer_time),
        workers=default_workers() if workers is None else _workers(workers),
        duckdb_threads=_duckdb_threads(duckdb_threads),
        spark_master=spark_master,
        spark_conf=tuple(spark_conf),
        reservation_lease=None
        if reservation_lease is None
        else as_positive("--reservation-lease", reservation_lease),
    )
    # Bound before the app (and its worker processes) start: a port in use is bad input,
    # refused here with exit status 2 (uvicorn's own failure would exit 3, the over-budget
    # status).
    sock = _listen(host, port)
    port = int(sock.getsockname()[1])  # the port chosen when --port 0
    try:
        app = create_app(settings)
    except BaseException:
        sock.close()
        raise
    url = f"http://{host}:{port}"
    payload = {
        "url": url,
        "api": url + "/v1",
        "openapi": url + "/v1/openapi.json",
        "db": db,
        "pid": os.getpid(),
        "rate": settings.rate,
        "burst": settings.burst,
        "max_body_bytes": settings.max_body_bytes,
        "admin_routes": settings.admin_token_sha256 is not None,
        "keep_open": settings.keep_open,
        "max_concurrent_per_analyst": settings.max_concurrent_per_analyst,
        "query_timeout": settings.query_timeout,
        "answer_time": settings.answer_time,
        "spark_answer_time": settings.spark_answer_time,
        "workers": settings.workers,
        # The settings' keys only: a value may be a credential (an S3 secret key).
        "spark_master": settings.spark_master,
        "spark_conf_keys": sorted({c.partition("=")[0].strip() for c in settings.spark_conf}),
    }
    emit(
        payload,
        as_json,
        lambda p: click.echo(
            f"infodp: serving {p['db']} on {p['api']} (docs at /v1/docs)", err=True
        ),
    )
    sys.stdout.flush()
    # Hand the interpreter lock over every 1 ms (default 5 ms): a thread releasing one
    # analyst's answer then waits less behind another analyst's CPU-bound work.
    sys.setswitchinterval(0.001)
    # Not uvicorn's dictConfig: it shuts down every handler of the process (other
    # libraries', and their streams with them); infodp.server.log_setup adds uvicorn's.
    log_setup.configure()
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        log_level=log_level,
        workers=1,
        access_log=not as_json,
        # A header deadline, bounded headers and at most MAX_HALF_OPEN connections without a
        # request per address (infodp.server.protocol); idle keep-alive connections close
        # after 5 s.
        http=guarded_http(HEADER_TIMEOUT, MAX_HALF_OPEN),
        timeout_keep_alive=5,
    )
    server = uvicorn.Server(config)
    from infodp.cli._serving import serving

    try:
        with serving(db):  # a write to the store is refused at once (infodp.cli._serving)
            server.run(sockets=[sock])
    finally:
        sock.close()
    if not server.started:
        raise InternalError("the server did not start; see the log above")


@analyst_group.command("key")
@db_option
@click.option("--name", required=True, help="The analyst (must already have a budget).")
@json_option
def analyst_key(db: str, name: str, as_json: bool) -> None:
    """Issue a server API key idp_<id>.<secret> for NAME (shown once)."""
    from infodp.server.auth import KeyStore, key_store_path

    _existing_store(db)
    _known_analyst(db, name)
    key = KeyStore(key_store_path(db)).issue(name)
    payload = {"analyst": name, "api_key": key, "key_id": key.split(".", 1)[0][4:]}
    emit(
        payload,
        as_json,
        lambda p: click.echo(
            f"API key for {p['analyst']} (shown once, store it now): {p['api_key']}"
        ),
    )


@analyst_group.command("revoke")
@db_option
@click.option("--name", required=True, help="The analyst whose keys are revoked.")
@click.option("--key-id", default=None, help="Revoke only this server key (default: all keys).")
@json_option
def analyst_revoke(db: str, name: str, key_id: str | None, as_json: bool) -> None:
    """Revoke NAME's API keys (all, including the ledger key, unless --key-id is given)."""
    from infodp.server.auth import KeyStore, key_store_path

    _existing_store(db)
    _known_analyst(db, name)
    store = KeyStore(key_store_path(db))
    if key_id is not None and key_id not in {k.key_id for k in store.keys(name)}:
        raise ParameterError("--key-id", key_id, f"one of {name}'s key ids")
    n = store.revoke(name, key_id)
    payload: dict[str, Any] = {
        "analyst": name,
        "revoked_server_keys": n,
        "ledger_key_revoked": key_id is None,
    }
    emit(
        payload,
        as_json,
        lambda p: click.echo(
            f"revoked {p['revoked_server_keys']} server key(s) of {p['analyst']}"
            + (" and their ledger key" if p["ledger_key_revoked"] else "")
        ),
    )


@analyst_group.command("keys")
@db_option
@click.option("--name", default=None, help="Only this analyst's keys.")
@json_option
def analyst_keys(db: str, name: str | None, as_json: bool) -> None:
    """List issued server key ids (never the secrets)."""
    from infodp.server.auth import KeyStore, key_store_path

    _existing_store(db)
    keys = [k.to_dict() for k in KeyStore(key_store_path(db)).keys(name)]
    emit(
        {"keys": keys},
        as_json,
        lambda p: click.echo(
            "\n".join(
                f"{k['key_id']} {k['analyst']} created {k['created']}"
                + (f" revoked {k['revoked']}" if k["revoked"] else "")
                for k in p["keys"]
            )
            or "no server keys"
        ),
    )


COMMANDS: list[click.Command] = [serve]
