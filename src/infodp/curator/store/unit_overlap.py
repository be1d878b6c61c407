"""Which registered population a new one mostly repeats: bottom-k sketches of salted unit ids.

A dataset registered again with one dummy row is new content (its fingerprint differs), but
it holds the same people: fresh budgets on it would make the population's total privacy
loss unbounded. So every registration keeps, owner-side in the ledger, a *sketch* of its
privacy units: the :data:`SKETCH_SIZE` smallest values of a 64-bit hash of each distinct
unit id prefixed by the ledger's secret salt (computed in the database; DuckDB's ``hash``,
the 64-bit hash of :mod:`infodp.curator.backends.dialects`). A new dataset whose estimated
*containment* in a registered budget group — the share of its units that are also that
group's — is at least :data:`SHARE_THRESHOLD` looks like a copy: its registration is refused
until the owner declares it the same population (one set of caps and one spend account per
analyst for the group's datasets, :mod:`infodp.curator.ledger.groups`) or independent. The
sketch only advises the owner; it never decides a membership.

Estimator (Broder 1997, "On the resemblance and containment of documents", §3: the k
smallest hashes of A ∪ B are the k smallest of the union of the two sketches, a uniform
random k-subset of A ∪ B). Let U be that sample, Y = |U ∩ A| (read from A's sketch: a value
of U that is in A is among A's k smallest) and X = |U ∩ A ∩ B|. The containment
c = |A ∩ B| / |A| is estimated by ĉ = X / Y. Given Y = y, U ∩ A is a uniform y-subset of A,
so X is hypergeometric and, by Hoeffding (1963, Thm 1, and §6: sampling without replacement
is at least as concentrated),

    P(|ĉ − c| ≥ t) ≤ 2 exp(−2 y t²),   i.e. |ĉ − c| ≤ √(ln(2/β) / (2y)) w.p. ≥ 1 − β.

For a copy of the same size y ≈ k = 4096: ±0.042 at β = 10⁻⁶. y is small when A is a small
part of A ∪ B (a few units against a large population): the estimate then says little, and
the bound says so. When |A ∪ B| < k the sketches are the whole sets and ĉ is exact. The hash
is DuckDB's (not a cryptographic function): the analysis treats it as a random function of
the salted id, which a secret salt makes impossible to steer.

>>> import hashlib
>>> def h(i):  # a stand-in for the database's salted hash
...     return int.from_bytes(hashlib.blake2b(str(i).encode(), digest_size=8).digest(), "big")
>>> a = UnitSketch.of(map(h, range(0, 10_000)), k=512)
>>> b = UnitSketch.of(map(h, range(2_000, 12_000)), k=512)
>>> est = containment(a, b)
>>> abs(float(est.estimate) - 0.8) <= est.error(1e-9)
True
>>> containment(UnitSketch.of(range(10)), UnitSketch.of(range(5, 30))).estimate
Fraction(1, 2)
"""

from __future__ import annotations

import contextlib
import heapq
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from infodp.errors import ParameterError

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "SHARE_THRESHOLD",
    "SKETCH_SIZE",
    "Containment",
    "UnitSketch",
    "closest_group",
    "containment",
    "sketch_units",
]

#: k: how many of the smallest salted unit hashes a sketch keeps (32 KiB per dataset).
SKETCH_SIZE = 4096
#: A new dataset looks like a copy of an existing group (its owner must declare it either way)
#: when at least this share of its units is estimated to be in the group (ĉ ≥ 1/2: "mostly
#: the same units").
SHARE_THRESHOLD = Fraction(1, 2)

_HEADER = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class UnitSketch:
    """The ``k`` smallest distinct 64-bit hashes of a set's elements, ascending (all of them
    when the set has fewer than ``k``: the sketch is then *complete*)."""

    hashes: tuple[int, ...]
    k: int = SKETCH_SIZE

    @classmethod
    def of(cls, values: Iterable[int], k: int = SKETCH_SIZE) -> UnitSketch:
        """The sketch of a set of hash values (Python's; the database computes its own).

        >>> UnitSketch.of([5, 1, 5, 9, 3], k=3).hashes
        (1, 3, 5)
        """
        if k < 1:
            raise ParameterError("k", k, "a positive number of hashes")
        return cls(tuple(heapq.nsmallest(k, set(values))), k)

    @property
    def complete(self) -> bool:
        """True when the sketch holds every element of its set (fewer than ``k``)."""
        return len(self.hashes) < self.k

    def union(self, other: UnitSketch) -> UnitSketch:
        """The sketch of the union of both sets (Broder 1997, §3), at the smaller ``k``.

        >>> UnitSketch.of([1, 4, 6], k=2).union(UnitSketch.of([2, 3], k=2)).hashes
        (1, 2)
        """
        return UnitSketch.of((*self.hashes, *other.hashes), min(self.k, other.k))

    def to_bytes(self) -> bytes:
        """As the ledger stores it: ``k`` then the hashes, big-endian.

        >>> UnitSketch.from_bytes(UnitSketch.of([7, 2], k=4).to_bytes())
        UnitSketch(hashes=(2, 7), k=4)
        """
        return _HEADER.pack(self.k) + struct.pack(f">{len(self.hashes)}Q", *self.hashes)

    @classmethod
    def from_bytes(cls, data: bytes) -> UnitSketch:
        """The sketch :meth:`to_bytes` wrote."""
        (k,) = _HEADER.unpack_from(data)
        n = (len(data) - _HEADER.size) // 8
        return cls(struct.unpack_from(f">{n}Q", data, _HEADER.size), k)


@dataclass(frozen=True, slots=True)
class Containment:
    """ĉ = ``common`` / ``sampled`` (see the module docstring); ``exact`` when the sample is
    the whole union."""

    common: int
    sampled: int
    exact: bool

    @property
    def estimate(self) -> Fraction | None:
        """ĉ = X / Y (None when no unit of the new set was sampled: nothing is known)."""
        return None if self.sampled == 0 else Fraction(self.common, self.sampled)

    def error(self, beta: float = 1e-6) -> float:
        """The half-width t with P(|ĉ − c| ≥ t) ≤ β: √(ln(2/β) / (2y)) (Hoeffding 1963,
        Thm 1); 0 when exact, 1 when nothing was sampled.

        >>> round(Containment(4000, 4096, False).error(1e-6), 3)
        0.042
        """
        if not 0 < beta < 1:
            raise ParameterError("beta", beta, "a probability in (0, 1)")
        if self.exact:
            return 0.0
        if self.sampled == 0:
            return 1.0
        return min(1.0, math.sqrt(math.log(2 / beta) / (2 * self.sampled)))

    @property
    def shares(self) -> bool:
        """ĉ ≥ :data:`SHARE_THRESHOLD`."""
        est = self.estimate
        return est is not None and est >= SHARE_THRESHOLD


def containment(new: UnitSketch, old: UnitSketch) -> Containment:
    """The estimated share of ``new``'s units that are in ``old`` (module docstring).

    >>> c = containment(UnitSketch.of(range(100), k=8), UnitSketch.of(range(100), k=8))
    >>> (c.common, c.sampled)
    (8, 8)
    """
    k = min(new.k, old.k)
    union = UnitSketch.of((*new.hashes, *old.hashes), k)
    in_new, in_old = set(new.hashes), set(old.hashes)
    sampled = [h for h in union.hashes if h in in_new]
    common = sum(1 for h in sampled if h in in_old)
    return Containment(common, len(sampled), exact=union.complete)


def closest_group(
    new: UnitSketch, groups: Mapping[str, Sequence[UnitSketch]]
) -> tuple[str, Containment] | None:
    """The group (name → its datasets' sketches) in which ``new`` is most contained, when
    that containment is at least the threshold; else None. A group's sketch is the union of
    its datasets' (the sketch of the union of their units).

    >>> mine = UnitSketch.of(range(100))
    >>> closest_group(mine, {"a": [UnitSketch.of(range(60))], "b": [UnitSketch.of(range(90))]})
    ('b', Containment(common=90, sampled=100, exact=True))
    >>> closest_group(mine, {"a": [UnitSketch.of(range(500, 600))]}) is None
    True
    """
    best: tuple[str, Containment] | None = None
    for name, sketches in sorted(groups.items()):
        if not sketches:
            continue
        merged = sketches[0]
        for s in sketches[1:]:
            merged = merged.union(s)
        found = containment(new, merged)
        if found.shares and (best is None or _above(found, best[1])):
            best = (name, found)
    return best


def _above(a: Containment, b: Containment) -> bool:
    ea, eb = a.estimate, b.estimate
    return ea is not None and (eb is None or ea > eb)


def sketch_units(
    con: duckdb.DuckDBPyConnection,
    tables: Sequence[tuple[str, str]],
    salt: str,
    k: int = SKETCH_SIZE,
) -> UnitSketch:
    """The sketch of the distinct unit ids of ``tables`` (a relation's SQL, its unit
    column), computed in DuckDB: ``hash(salt || CAST(unit AS VARCHAR))``, the ``k`` smallest.

    Ids are compared as text (an id stored as an integer in one table and as text in another
    is the same unit); the salt is a bound parameter, never in the statement's text.

    >>> import duckdb
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE t AS SELECT range % 50 AS pid FROM range(200)")
    >>> s = sketch_units(con, [('"t"', "pid")], "salt", k=64)
    >>> (len(s.hashes), s.complete)
    (50, True)
    """
    if not tables:
        raise ParameterError("tables", [], "at least one table with a unit column")
    parts = [
        f"SELECT CAST({_quote(unit)} AS VARCHAR) AS u FROM {relation} "
        f"WHERE {_quote(unit)} IS NOT NULL"
        for relation, unit in tables
    ]
    sql = (
        f"SELECT DISTINCT hash(concat(?, u)) AS h FROM ({' UNION ALL '.join(parts)}) "
        f"ORDER BY h LIMIT {int(k)}"
    )
    with contextlib.closing(con.cursor()) as cur:
        rows = cur.execute(sql, [salt]).fetchall()
    return UnitSketch(tuple(int(r[0]) for r in rows), k)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
