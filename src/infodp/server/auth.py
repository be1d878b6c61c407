"""API keys of the HTTP service: issue, revoke and verify (only salted hashes are stored).

Two kinds of bearer key are accepted (``Authorization: Bearer <key>``):

* **server keys** ``idp_<key id>.<secret>`` issued by ``infodp analyst key`` and kept in
  the store's ledger (``<store>.ledger``, the one key system): the 16-hex-digit key id is
  stored in clear, so
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
>>> from infodp.curator.ledger import Ledger
>>> ks = KeyStore(Ledger(os.path.join(tempfile.mkdtemp(), "s.ledger")))
>>> key = ks.issue("alice")
>>> ks.verify(key).analyst
'alice'
>>> ks.revoke("alice")
1
>>> ks.verify(key) is None
True
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infodp.curator.ledger import KEY_PREFIX, KeyRecord
from infodp.errors import ParameterError

__all__ = [
    "KEY_PREFIX",
    "Identity",
    "KeyRecord",
    "KeyStore",
    "key_store_path",
    "parse_bearer",
]


_SERVER_KEY = re.compile(r"^idp_([0-9a-f]{16})\.([A-Za-z0-9_-]{43})$")
_LEDGER_KEY = re.compile(r"^[A-Za-z0-9_-]{43}$")
#: A well-formed bearer token (``b64token`` of RFC 6750, Jones & Hardt 2012, Sec. 2.1).
_TOKEN = re.compile(r"^[A-Za-z0-9._~+/-]+=*$")


def key_store_path(db: str | os.PathLike[str]) -> Path:
    """Where the keys of a store ``db`` live: its ledger (``<db>.ledger``).

    >>> key_store_path("data/store.duckdb").name
    'store.duckdb.ledger'
    """
    return Path(str(db) + ".ledger")


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a verified key belongs to; ``key_id`` names the key (logs), ``limits`` the
    analyst's share of the service's limits, the same for every key they hold.

    >>> Identity("alice", "ledger:alice").analyst
    'alice'
    >>> Identity("alice", "0123456789abcdef").limits == Identity("alice", "ledger:alice").limits
    True
    """

    analyst: str
    key_id: str

    @property
    def limits(self) -> str:
        """The bucket of every per-client limit (rate, in-flight, heavy slots, workers): the
        analyst, not the key, so an analyst holding several keys gets one share. Prefixed,
        so no analyst's name can collide with another bucket (``"admin"``, ``"ip:..."``).

        >>> Identity("bob", "ledger:bob").limits
        'analyst:bob'
        """
        return "analyst:" + self.analyst


def parse_bearer(header: str | None) -> tuple[str, str | None]:
    """Classify an ``Authorization`` header: ("missing" | "malformed" | "server" | "ledger" |
    "unknown", token).

    "malformed" is a header that is not ``Bearer <token>`` with one token of the characters
    RFC 6750 allows (Jones & Hardt 2012, Sec. 2.1); "unknown" a well-formed token of neither
    key shape, which no key matches.

    >>> parse_bearer(None)
    ('missing', None)
    >>> parse_bearer("Basic abc")[0], parse_bearer("Bearer a b")[0]
    ('malformed', 'malformed')
    >>> parse_bearer("Bearer nope")
    ('unknown', 'nope')
    >>> parse_bearer("Bearer " + "a" * 43)[0]
    'ledger'
    """
    if header is None or not header.strip():
        return "missing", None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > 200 or not _TOKEN.match(token):
        return "malformed", None
    if _SERVER_KEY.match(token):
        return "server", token
    if _LEDGER_KEY.match(token):
        return "ledger", token
    return "unknown", token


class KeyStore:
    """The service's view of the keys, which live in the store's ledger (one key system).

    ``source`` is a :class:`~infodp.curator.ledger.Ledger`, a store's ledger path
    (``<db>.ledger``, see :func:`key_store_path`) or the store path; a path is opened with
    :func:`infodp.curator.store.database.open_store`, so a missing, foreign or corrupt ledger stops
    here.
    Issued keys and revocations are ledger rows: restoring an old copy of some other file can
    never revive a revoked key.

    >>> import tempfile, os
    >>> from infodp.curator.ledger import Ledger
    >>> ks = KeyStore(Ledger(os.path.join(tempfile.mkdtemp(), "s.ledger")))
    >>> key = ks.issue("bob")
    >>> key.startswith(KEY_PREFIX), len(key.split(".")[1])
    (True, 43)
    >>> [k.analyst for k in ks.keys()]
    ['bob']
    """

    def __init__(self, source: Any, *, timeout: float = 60.0) -> None:
        from infodp.curator.ledger import Ledger

        if isinstance(source, Ledger):
            self.ledger = source
        else:
            from infodp.curator.backends.duckdb import DuckDBBackend
            from infodp.curator.store.database import open_store

            text = str(source)
            db = text[: -len(".ledger")] if text.endswith(".ledger") else text
            if not Path(db).is_file():
                raise ParameterError("db", Path(db).name, "an existing infodp store")
            self.ledger = open_store(db, DuckDBBackend(db, timeout=timeout), timeout=timeout)
        self.path = self.ledger.path

    def issue(self, analyst: str) -> str:
        """A new key ``idp_<id>.<secret>`` for ``analyst`` (returned once; only a hash is kept).

        A revoked ledger key stays revoked; a new server key is the way back in.
        """
        return self.ledger.issue_key(analyst)

    def revoke(self, analyst: str, key_id: str | None = None) -> int:
        """Revoke ``analyst``'s server keys (or only ``key_id``) and their ledger keys.

        Returns how many server keys were newly revoked. Without ``key_id`` the analyst's
        ledger key (from ``infodp analyst add``) is refused from now on as well.
        """
        return self.ledger.revoke_keys(analyst, key_id)

    def ledger_key_revoked(self, analyst: str) -> bool:
        """True when ``analyst``'s ledger key has been revoked."""
        return self.ledger.ledger_key_revoked(analyst)

    def keys(self, analyst: str | None = None) -> list[KeyRecord]:
        """Issued server keys (ids and dates only), optionally of one analyst."""
        return self.ledger.key_records(analyst)

    def verify(self, key: str) -> Identity | None:
        """The identity of a valid, unrevoked server key; None otherwise (constant-time check)."""
        m = _SERVER_KEY.match(key)
        if m is None:
            return None
        key_id, secret = m.group(1), m.group(2)
        analyst = self.ledger.verify_server_key(key_id, secret)
        return None if analyst is None else Identity(analyst, key_id)

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
