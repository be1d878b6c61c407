"""A throw-away PostgreSQL cluster for tests: initdb + pg_ctl on a free loopback port.

The cluster lives in a temporary directory owned by an unprivileged user (PostgreSQL refuses
to run as root; CI runs as root, so the server runs as ``postgres``, the user Debian's
package creates), listens on 127.0.0.1 only, trusts loopback connections (nobody else can
reach it) and is stopped (``pg_ctl stop -m immediate``) and removed afterwards. Each ledger
gets its own schema, named in its URL (``options=-csearch_path=...``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def pg_bin() -> Path | None:
    """The directory of initdb and pg_ctl (PATH first, then Debian's layout), or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """One running cluster (see the module doc)."""

    def __init__(self, bindir: Path, *, fsync: bool = False) -> None:
        self.bindir = bindir
        #: Tests run without fsync (nothing to lose); benchmarks with it, as in production.
        self.fsync = fsync
        self.root = Path(tempfile.mkdtemp(prefix="infodp-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = "postgres"
        self._as: list[str] = []
        if os.geteuid() == 0:
            uid = pwd.getpwnam("postgres")
            os.chown(self.root, uid.pw_uid, uid.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        os.chmod(self.root, 0o755)

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self._as, *args], capture_output=True, text=True, check=check, timeout=120
        )

    def init(self) -> None:
        """initdb (trust on loopback, UTF-8) and start."""
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        self.start()

    def start(self) -> None:
        """Start the server (and wait until it accepts connections)."""
        opts = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} "
            f"-c fsync={'on' if self.fsync else 'off'} -c max_connections=200 "
            "-c shared_buffers=32MB"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "log"),
            "-o",
            opts,
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``immediate``: as if it crashed)."""
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop", check=False
        )

    def restart(self, pause: float = 0.0) -> None:
        """Stop (immediately, as in a crash), wait ``pause`` seconds, start again."""
        self.stop("immediate")
        time.sleep(pause)
        self.start()

    def url(self, schema: str | None = None) -> str:
        """A URL of the cluster's ``postgres`` database (in ``schema`` when given)."""
        base = f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"
        return base if schema is None else f"{base}?options=-csearch_path%3D{schema}"

    def new_schema(self) -> str:
        """A URL of a new, empty schema (one ledger)."""
        import psycopg

        name = "l_" + secrets.token_hex(6)
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")  # type: ignore[arg-type]  # ours, not input
        return self.url(name)

    def remove(self) -> None:
        """Stop the server and delete its files."""
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def cluster(*, fsync: bool = False) -> Iterator[Cluster]:
    """A started cluster, removed afterwards (raises RuntimeError when there is none)."""
    bindir = pg_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL (initdb) is not installed")
    c = Cluster(bindir, fsync=fsync)
    try:
        c.init()
        yield c
    finally:
        c.remove()
