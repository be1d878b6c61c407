"""API keys of the HTTP service: issue, revoke and verify (only salted hashes are stored).

Two kinds of bearer key are accepted (``Authorization: Bearer <key>``):

* **server keys** ``idp_<key id>.<secret>`` issued by ``infodp analyst key`` and kept in
  ``<store>.keys`` (SQLite, next to the ledger): the 16-hex-digit key id is stored in clear, so
  a request finds its one row by primary key; the 256-bit secret is stored only as a salted
  SHA-256 and compared in constant time (:func:`hmac.compare_digest`);
* **ledger keys**, the bare 43-character keys ``infodp analyst add`` prints (issued by
  :class:`infodp.curator.Ledger`): these carry no id, so they are checked against each
  analyst's salted hash with :meth:`Ledger.verify_key` — one hash per analyst, every analyst
  checked, so the time does not depend on who matched.

A secret of 256 bits cannot be guessed, so a slow password hash would add nothing (same
argument as the ledger's). Revocation (``infodp analyst revoke``) marks server keys revoked and
records that the analyst's ledger keys are no longer accepted; keys are never created or
revoked over the HTTP API.

>>> import tempfile, os
>>> ks = KeyStore(os.path.join(tempfile.mkdtemp(), "s.keys"))
>>> key = ks.issue("alice")
>>> ks.verify(key).analyst
'alice'
>>> ks.revoke("alice")
1
>>> ks.verify(key) is None
True
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import hmac
import os
import re
import secrets
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infodp.errors import ParameterError

__all__ = [
    "KEY_PREFIX",
    "Identity",
    "KeyRecord",
    "KeyStore",
    "key_store_path",
    "parse_bearer",
]

#: Prefix of server-issued keys (``idp_<16 hex key id>.<secret>``).
KEY_PREFIX = "idp_"

_SERVER_KEY = re.compile(r"^idp_([0-9a-f]{16})\.([A-Za-z0-9_-]{43})$")
_LEDGER_KEY = re.compile(r"^[A-Za-z0-9_-]{43}$")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS keys (
    key_id TEXT PRIMARY KEY, analyst TEXT NOT NULL, salt TEXT NOT NULL, hash TEXT NOT NULL,
    created TEXT NOT NULL, revoked TEXT);
CREATE TABLE IF NOT EXISTS ledger_key_revocations (
    analyst TEXT PRIMARY KEY, revoked TEXT NOT NULL);
"""


def key_store_path(db: str | os.PathLike[str]) -> Path:
    """Where the key store of a store ``db`` lives (``<db>.keys``).

    >>> key_store_path("data/store.duckdb").name
    'store.duckdb.keys'
    """
    return Path(str(db) + ".keys")


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256((salt + secret).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a verified key belongs to; ``key_id`` names the key (rate limits, logs).

    >>> Identity("alice", "ledger:alice").analyst
    'alice'
    """

    analyst: str
    key_id: str


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A server key as the admin sees it (never the secret or its hash).

    >>> sorted(KeyRecord("0123456789abcdef", "alice", "2026-01-01", None).to_dict())
    ['analyst', 'created', 'key_id', 'revoked']
    """

    key_id: str
    analyst: str
    created: str
    revoked: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            "key_id": self.key_id,
            "analyst": self.analyst,
            "created": self.created,
            "revoked": self.revoked,
        }


def parse_bearer(header: str | None) -> tuple[str, str | None]:
    """Classify an ``Authorization`` header: ("missing" | "malformed" | "server" | "ledger", key).

    >>> parse_bearer(None)
    ('missing', None)
    >>> parse_bearer("Basic abc")[0], parse_bearer("Bearer x.y")[0]
    ('malformed', 'malformed')
    >>> parse_bearer("Bearer " + "a" * 43)[0]
    'ledger'
    """
    if header is None or not header.strip():
        return "missing", None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > 200:
        return "malformed", None
    if _SERVER_KEY.match(token):
        return "server", token
    if _LEDGER_KEY.match(token):
        return "ledger", token
    return "malformed", None


class KeyStore:
    """Server API keys and revocations in a small SQLite file (WAL, fsync'd commits).

    >>> import tempfile, os
    >>> ks = KeyStore(os.path.join(tempfile.mkdtemp(), "s.keys"))
    >>> key = ks.issue("bob")
    >>> key.startswith(KEY_PREFIX), len(key.split(".")[1])
    (True, 43)
    >>> [k.analyst for k in ks.keys()]
    ['bob']
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 60.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.executescript(_SCHEMA)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            yield conn
        finally:
            conn.close()

    def issue(self, analyst: str) -> str:
        """A new key ``idp_<id>.<secret>`` for ``analyst`` (returned once; only a hash is kept).

        A revoked ledger key stays revoked; a new server key is the way back in.
        """
        if not isinstance(analyst, str) or not analyst.strip():
            raise ParameterError("analyst", analyst, "a non-empty analyst name")
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_hex(16)
        with self._connect() as conn:
            conn.execute(
                "INSERT INTO keys (key_id, analyst, salt, hash, created) VALUES (?, ?, ?, ?, ?)",
                (key_id, analyst, salt, _digest(salt, secret), _now()),
            )
        return f"{KEY_PREFIX}{key_id}.{secret}"

    def revoke(self, analyst: str, key_id: str | None = None) -> int:
        """Revoke ``analyst``'s server keys (or only ``key_id``) and their ledger keys.

        Returns how many server keys were newly revoked. Without ``key_id`` the analyst's
        ledger key (from ``infodp analyst add``) is refused from now on as well.
        """
        now = _now()
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if key_id is None:
                    cur = conn.execute(
                        "UPDATE keys SET revoked = ? WHERE analyst = ? AND revoked IS NULL",
                        (now, analyst),
                    )
                    conn.execute(
                        "INSERT OR REPLACE INTO ledger_key_revocations (analyst, revoked) "
                        "VALUES (?, ?)",
                        (analyst, now),
                    )
                else:
                    cur = conn.execute(
                        "UPDATE keys SET revoked = ? WHERE analyst = ? AND key_id = ? "
                        "AND revoked IS NULL",
                        (now, analyst, key_id),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return int(cur.rowcount)

    def ledger_key_revoked(self, analyst: str) -> bool:
        """True when ``analyst``'s ledger key has been revoked."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT 1 FROM ledger_key_revocations WHERE analyst = ?", (analyst,)
            ).fetchone()
        return row is not None

    def keys(self, analyst: str | None = None) -> list[KeyRecord]:
        """Issued server keys (ids and dates only), optionally of one analyst."""
        query = "SELECT key_id, analyst, created, revoked FROM keys"
        args: tuple[str, ...] = ()
        if analyst is not None:
            query += " WHERE analyst = ?"
            args = (analyst,)
        with self._connect() as conn:
            rows = conn.execute(query + " ORDER BY created, key_id", args).fetchall()
        return [KeyRecord(*r) for r in rows]

    def verify(self, key: str) -> Identity | None:
        """The identity of a valid, unrevoked server key; None otherwise (constant-time check)."""
        m = _SERVER_KEY.match(key)
        if m is None:
            return None
        key_id, secret = m.group(1), m.group(2)
        with self._connect() as conn:
            row = conn.execute(
                "SELECT analyst, salt, hash, revoked FROM keys WHERE key_id = ?", (key_id,)
            ).fetchone()
        if row is None:
            # Same work as a hit, so a miss does not answer faster.
            hmac.compare_digest(_digest("0" * 32, secret), "0" * 64)
            return None
        analyst, salt, digest, revoked = row
        ok = hmac.compare_digest(_digest(salt, secret), digest)
        if not ok or revoked is not None:
            return None
        return Identity(analyst, key_id)

    def verify_ledger_key(self, key: str, analysts: list[str], ledger: Any) -> Identity | None:
        """The analyst whose ledger key ``key`` is (checked against every analyst), if unrevoked.

        ``ledger`` is an :class:`infodp.curator.Ledger`; its ``verify_key`` does the salted
        constant-time comparison.
        """
        if _LEDGER_KEY.match(key) is None:
            return None
        found: str | None = None
        for name in analysts:
            if ledger.verify_key(name, key) and found is None:
                found = name
        if found is None or self.ledger_key_revoked(found):
            return None
        return Identity(found, "ledger:" + found)
