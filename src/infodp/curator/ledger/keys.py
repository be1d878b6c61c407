"""API keys: 256-bit secrets of which only a salted SHA-256 is stored.

A key this long cannot be brute-forced, so a slow password hash would add nothing. Two kinds
live in the ledger: the key :meth:`Ledger.add_analyst` prints (hashed in the analysts row,
revoked per analyst) and server keys ``idp_<16 hex key id>.<secret>`` (key id in clear, secret
hashed, revoked one by one or all of an analyst's).

>>> salt, hashed = new_digest("secret")
>>> matches("secret", salt, hashed), matches("guess", salt, hashed)
(True, False)
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from infodp.curator.ledger.charging import now
from infodp.curator.ledger.records import KeyRecord
from infodp.curator.ledger.storage import Database
from infodp.errors import ParameterError

__all__ = [
    "KEY_PREFIX",
    "digest",
    "issue",
    "matches",
    "new_digest",
    "records",
    "revoke",
    "revoked_analyst",
    "verify_analyst",
    "verify_server",
]

#: Prefix of issued server keys (``idp_<16 hex key id>.<secret>``).
KEY_PREFIX = "idp_"


def digest(salt: str, secret: str) -> str:
    """The stored hash of a secret."""
    return hashlib.sha256((salt + secret).encode()).hexdigest()


def new_digest(secret: str) -> tuple[str, str]:
    """(salt, hash) of a new secret."""
    salt = secrets.token_hex(16)
    return salt, digest(salt, secret)


def matches(secret: str, salt: str, stored: str) -> bool:
    """Whether ``secret`` hashes to ``stored`` (constant-time comparison)."""
    return hmac.compare_digest(digest(salt, secret), stored)


def verify_analyst(db: Database, name: str, key: str) -> bool:
    """True when ``key`` is one of the keys issued to analyst ``name``, unrevoked."""
    with db.read() as conn:
        rows = conn.execute(
            "SELECT key_salt, key_hash FROM analysts WHERE name = ?", (name,)
        ).fetchall()
        revoked = conn.execute(
            "SELECT 1 FROM key_revocations WHERE analyst = ?", (name,)
        ).fetchone()
    matched = any(matches(key, r["key_salt"], r["key_hash"]) for r in rows)
    return matched and revoked is None


def issue(db: Database, analyst: str) -> str:
    """A new server key for ``analyst`` (returned once; only a hash is kept)."""
    if not isinstance(analyst, str) or not analyst.strip():
        raise ParameterError("analyst", analyst, "a non-empty analyst name")
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    salt, hashed = new_digest(secret)
    with db.guarded() as conn:
        conn.execute(
            "INSERT INTO keys (key_id, analyst, salt, hash, created) VALUES (?, ?, ?, ?, ?)",
            (key_id, analyst, salt, hashed, now()),
        )
    return f"{KEY_PREFIX}{key_id}.{secret}"


def revoke(db: Database, analyst: str, key_id: str | None = None) -> int:
    """Revoke ``analyst``'s server keys (or only ``key_id``) and, without ``key_id``, the
    keys ``add_analyst`` printed; returns how many server keys were newly revoked."""
    stamp = now()
    with db.guarded() as conn:
        if key_id is not None:
            cur = conn.execute(
                "UPDATE keys SET revoked = ? WHERE analyst = ? AND key_id = ? AND revoked IS NULL",
                (stamp, analyst, key_id),
            )
            return int(cur.rowcount)
        cur = conn.execute(
            "UPDATE keys SET revoked = ? WHERE analyst = ? AND revoked IS NULL", (stamp, analyst)
        )
        conn.execute(
            "INSERT OR REPLACE INTO key_revocations (analyst, revoked) VALUES (?, ?)",
            (analyst, stamp),
        )
    return int(cur.rowcount)


def revoked_analyst(db: Database, analyst: str) -> bool:
    """True when the keys ``add_analyst`` issued to ``analyst`` have been revoked."""
    with db.read() as conn:
        row = conn.execute("SELECT 1 FROM key_revocations WHERE analyst = ?", (analyst,)).fetchone()
    return row is not None


def records(db: Database, analyst: str | None = None) -> list[KeyRecord]:
    """Issued server keys (ids and dates only), optionally of one analyst."""
    query = "SELECT key_id, analyst, created, revoked FROM keys"
    args: tuple[str, ...] = ()
    if analyst is not None:
        query, args = query + " WHERE analyst = ?", (analyst,)
    with db.read() as conn:
        rows = conn.execute(query + " ORDER BY created, key_id", args).fetchall()
    return [KeyRecord(r["key_id"], r["analyst"], r["created"], r["revoked"]) for r in rows]


def verify_server(db: Database, key_id: str, secret: str) -> str | None:
    """The analyst of a valid, unrevoked server key; None otherwise (constant-time)."""
    with db.read() as conn:
        row = conn.execute(
            "SELECT analyst, salt, hash, revoked FROM keys WHERE key_id = ?", (key_id,)
        ).fetchone()
    if row is None:
        # Same work as a hit, so a miss does not answer faster.
        hmac.compare_digest(digest("0" * 32, secret), "0" * 64)
        return None
    ok = matches(secret, row["salt"], row["hash"])
    return str(row["analyst"]) if ok and row["revoked"] is None else None
