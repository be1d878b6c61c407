"""A FROM clause with its joins: which joins bound each unit's rows, and how far.

Joins accepted, with the most rows one unit has in the result (m' below; McSherry 2009, §4:
a unit's contribution is bounded by its rows):

- **private ⋈ private on the privacy unit** (the ON holds ``a.unit = b.unit``; other
  conjuncts are filters): a unit's rows pair only with its own rows, so m' = m1·m2 (a LEFT
  JOIN keeps an unmatched row once: m1·max(m2, 1), the same). Any other key would pair one
  unit's rows with another's, and is refused.
- **private ⋈ public on equality keys** of public columns: each private row meets at most
  M rows of the public table, M the least ``multiplicity`` (most rows sharing one value,
  measured on the public data at registration) over the key columns: m' = m·M
  (LEFT: m·max(M, 1)).
- chains of both, in any order (a public table first is joined INNER to the private one).

Refused, each saying why and what is allowed: cross joins and joins without an equality,
RIGHT and FULL joins, private tables joined on a key other than the unit (a self-join
included) or when each row is its own unit, join keys of mismatched types, public tables
joined to each other before any private table, and queries reading no private table.

Columns keep their names when unique among the joined tables, else ``table.column`` (the
alias for a table read twice); ``t.c`` and ``alias.c`` name them too, and a key equal on both
sides (``USING (k)`` or ``a.k = b.k``) is one column ``k``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from sqlglot import exp

from infodp.curator.relations.expressions import condition
from infodp.curator.relations.sources import Source
from infodp.curator.relations.values import NUMERIC, Value, refuse
from infodp.errors import ParameterError

__all__ = ["Scope", "scope_of"]

#: Reads one source of a FROM clause (a stored table, or a subquery's relation).
Reader = Callable[[exp.Expr], Source]


@dataclass
class Scope:
    """The sources joined by one FROM clause, their columns, and the bounds per unit."""

    sources: list[Source]
    #: Most rows (m') and groups of one unit in the joined rows.
    rows: int = 1
    groups: int = 1
    #: The joins as emitted (``FROM first JOIN ... ON ...``).
    joins: list[exp.Join] = field(default_factory=list)
    #: (source index, column) hidden behind the column it equals (a shared key, the unit).
    merged: dict[tuple[int, str], tuple[int, str]] = field(default_factory=dict)
    #: The factors of ``rows``, in words (how the bound arose).
    trail: list[str] = field(default_factory=list)
    #: The most rows of one unit in any relation built so far (the joined rows, or inside a
    #: subquery), and how it arose: the work one individual can cause.
    work: int = 0
    how: str = ""
    #: (source index, lower-cased column) -> the public keys it takes from an inner join on a
    #: public table's text key (:func:`_public_keys`).
    keys: dict[tuple[int, str], tuple[str, ...]] = field(default_factory=dict)

    def worked(self, source: Source) -> None:
        """Take the joined rows' bound, and ``source``'s own work, into ``work``."""
        if self.rows > self.work:
            trail = self.trail
            if len(trail) > 8:  # a message as short as a long chain allows
                trail = [*trail[:3], f"… {len(trail) - 5} more factors …", *trail[-2:]]
            factors = " × ".join(trail)
            self.work, self.how = (
                self.rows,
                (factors if len(self.trail) == 1 else f"{factors} = {self.rows}"),
            )
        if source.work > self.work:
            self.work, self.how = source.work, source.how

    # -- columns ----------------------------------------------------------------------------

    @property
    def unit(self) -> tuple[int, str] | None:
        """The privacy unit's column: the first private source's."""
        for i, s in enumerate(self.sources):
            if not s.public and s.unit is not None:
                return i, s.unit
        return None

    def visible(self) -> list[tuple[str, int, str]]:
        """(relation name, source index, column) of every column not merged into another,
        the unit first."""
        unit = self.unit
        cols = self._unmerged()
        counts = Counter(c.lower() for _, c in cols)
        labels = [s.label.lower() for s in self.sources]
        out = []
        for i, c in cols:
            s = self.sources[i]
            label = s.label if labels.count(s.label.lower()) == 1 else s.alias
            name = c if counts[c.lower()] == 1 or (i, c) == unit else f"{label}.{c}"
            out.append((name, i, c))
        return out

    def _unmerged(self) -> list[tuple[int, str]]:
        """(source index, column) of every column not merged into another."""
        unit = self.unit
        return [
            (i, c)
            for i, s in enumerate(self.sources)
            for c in s.names()
            if (i, c.lower()) not in self.merged and not (c == s.unit and (i, c) != unit)
        ]

    def resolve(self, node: exp.Column) -> tuple[int, str]:
        """The (source index, column) a reference names, merged keys followed."""
        name = node.name
        if node.table:
            return self._qualified(node)
        found = {
            self.merged.get((i, spec.name.lower()), (i, spec.name))
            for i, s in enumerate(self.sources)
            if (spec := s.spec(name)) is not None
        }
        unit = self.unit
        if unit is not None and name.lower() == unit[1].lower():
            found = {unit}
        if not found:
            known = ", ".join(n for n, _, _ in self.visible())
            raise ParameterError(f"unknown column {name!r}; the query's columns: {known}.")
        if len(found) > 1:
            options = " or ".join(f"{self.sources[i].alias}.{c}" for i, c in sorted(found))
            raise ParameterError(f"column {name!r} is ambiguous; write {options}.")
        return found.pop()

    def _qualified(self, node: exp.Column) -> tuple[int, str]:
        """What ``table.column`` names (the alias first, then the table's label)."""
        matches = [
            i for i, s in enumerate(self.sources) if node.table.lower() == s.alias.lower()
        ] or [i for i, s in enumerate(self.sources) if node.table.lower() == s.label.lower()]
        if len(matches) != 1:
            known = ", ".join(s.alias for s in self.sources)
            raise ParameterError(
                f"unknown table qualifier {node.table!r} in column {node.sql()!r}; "
                f"the query reads {known}."
            )
        i = matches[0]
        spec = self.sources[i].spec(node.name)
        if spec is None:
            self.sources[i].value(node.name)  # raises, naming the source's columns
            raise AssertionError
        return self.merged.get((i, spec.name.lower()), (i, spec.name))

    def value(self, node: exp.Column) -> Value:
        """The value a column reference reads."""
        return self.column_value(*self.resolve(node))

    def column_value(self, i: int, c: str) -> Value:
        """Source ``i``'s column ``c`` as the joined rows hold it: a key inner-joined to a
        public table's text key is a category of that table's values."""
        v = self.sources[i].value(c)
        cats = self.keys.get((i, c.lower()))
        if cats is None:
            return v
        spec = None if v.spec is None else replace(v.spec, type="category", categories=cats)
        return replace(v, type="category", categories=cats, spec=spec)

    def name(self, node: exp.Column) -> str:
        """The relation's name of the column a reference reads."""
        got = self.resolve(node)
        for name, i, c in self.visible():
            if (i, c.lower()) == (got[0], got[1].lower()):
                return name
        raise AssertionError(f"column {node.sql()} is not visible")

    @property
    def private(self) -> bool:
        """At least one private table (or derived relation) is read."""
        return any(not s.public for s in self.sources)

    def from_(self) -> exp.Select:
        """``SELECT FROM first JOIN ...`` (the caller fills the items)."""
        select = exp.Select().from_(self.sources[0].relation.copy(), copy=False)
        if self.joins:
            select.set("joins", [j.copy() for j in self.joins])
        return select


def scope_of(select: exp.Select, read: Reader) -> Scope:
    """The FROM clause of ``select``, every join checked (see the module docstring).

    >>> import sqlglot
    >>> from infodp.curator.declaration.source import load_schema
    >>> from infodp.curator.relations.sources import table_source
    >>> s = load_schema({"privacy_unit": "pid", "table": "c", "tables": {
    ...     "a": {"max_rows_per_unit": 2, "columns": {"pid": {"type": "text"}}},
    ...     "b": {"max_rows_per_unit": 5, "columns": {"pid": {"type": "text"}}}}})
    >>> q = sqlglot.parse_one("SELECT COUNT(*) FROM a JOIN b USING (pid)")
    >>> scope_of(q, lambda t: table_source(t, s)).rows
    10
    """
    src = select.args.get("from_") or select.args.get("from")
    if src is None:
        raise refuse("SELECT without FROM", "name a table of the dataset")
    first = read(src.this)
    scope = Scope([first], rows=max(first.rows, 1), groups=max(first.groups, 1))
    scope.trail.append(first.term())
    scope.worked(first)
    for join in select.args.get("joins") or []:
        _join(scope, join, read)
        scope.worked(scope.sources[-1])
    if not scope.private:
        raise refuse("a query that reads no private table", "there is nothing to protect")
    scope.groups = min(scope.groups, scope.rows)
    return scope


def _join(scope: Scope, join: exp.Join, read: Reader) -> None:
    side = _side(join)
    on, using = join.args.get("on"), join.args.get("using")
    if on is None and not using:
        raise refuse("join without a condition (a cross join)", _HOW)
    left_private = scope.private
    right = _right(read(join.this), side, left_private)
    scope.sources.append(right)
    r = len(scope.sources) - 1
    shared = _using(scope, using, r) if using else []
    conjuncts = _conjuncts(on) if on is not None else []
    pairs = shared + [p for c in conjuncts if (p := _pair(scope, c, r)) is not None]
    _check_types(scope, pairs)
    _bound(scope, pairs, r, left_private, side)
    cond = [condition(c, scope.value, "join condition").raw for c in conjuncts]
    cond += [
        exp.EQ(this=scope.sources[li].value(lc).raw, expression=right.value(rc).raw)
        for (li, lc), (_, rc) in shared
    ]
    _merge(scope, pairs)
    if side != "LEFT" and right.public and left_private:
        _public_keys(scope, pairs)
    scope.joins.append(exp.Join(this=right.relation.copy(), on=exp.and_(*cond), side=side or None))


def _side(join: exp.Join) -> str:
    """The join's side ("" or "LEFT"), every other kind of join refused."""
    side = (join.side or "").upper()
    kind = (join.kind or "").upper()
    if side in ("RIGHT", "FULL"):
        raise refuse(f"{side} JOIN", "use LEFT JOIN with the tables swapped")
    if kind == "CROSS" or join.args.get("method") or kind in ("SEMI", "ANTI", "ASOF"):
        what = join.args.get("method") or kind
        raise refuse(f"{str(what).upper()} JOIN", "join with ON a.key = b.key or USING (key)")
    if kind not in ("", "INNER", "OUTER") or side not in ("", "LEFT"):
        raise refuse(f"{side} {kind} JOIN".strip(), "use JOIN or LEFT JOIN")
    return side


def _right(right: Source, side: str, left_private: bool) -> Source:
    """The joined source as the join reads it (a LEFT JOIN's may be all NULL)."""
    if side != "LEFT":
        return right
    if not left_private:
        raise refuse("LEFT JOIN that keeps a public table's rows", _PUBLIC_FIRST)
    return _nullable(right)


def _bound(scope: Scope, pairs: Sequence[Pair], r: int, left_private: bool, side: str) -> None:
    """Multiply the scope's rows and groups per unit by what joining source ``r`` adds."""
    right, left = scope.sources[r], scope.sources[:r]
    if not right.public and left_private:
        _private_pair(scope, right, pairs, r, left)
        scope.rows *= right.rows
        scope.groups *= right.groups
        scope.trail.append(right.term())
    elif not left_private and not right.public:
        _after_public(scope, pairs, right, left)
    elif not left_private:
        raise refuse("a join of public tables only: it reads no private table", _PUBLIC_FIRST)
    else:
        m = _multiplicity(scope, [rc for _, rc in pairs], "public")
        m = max(m, 1) if side == "LEFT" else m
        scope.rows *= m
        scope.groups *= m
        scope.trail.append(_shared_key(right, [rc for _, rc in pairs], m))


_HOW = "join with ON a.key = b.key or USING (key)"
_PUBLIC_FIRST = (
    "a public table is joined to a private one: list a private table first, "
    "or JOIN (not LEFT JOIN) the public table to it"
)


def _nullable(s: Source) -> Source:
    return replace(s, nullable=True)


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.args["expression"])
    return [node]


Pair = tuple[tuple[int, str], tuple[int, str]]


def _using(scope: Scope, using: Sequence[exp.Expr], r: int) -> list[Pair]:
    """USING (k, ...): the left side's k equals the right side's."""
    left = Scope(scope.sources[:r], merged=scope.merged)
    out: list[Pair] = []
    for key in using:
        spec = scope.sources[r].spec(key.name)
        if spec is None:
            scope.sources[r].value(key.name)  # raises, naming the table's columns
            continue
        out.append((left.resolve(exp.column(key.name)), (r, spec.name)))
    return out


def _pair(scope: Scope, node: exp.Expr, r: int) -> Pair | None:
    """A conjunct ``left.col = right.col`` as ((left source, col), (right source, col))."""
    if not isinstance(node, exp.EQ):
        return None
    a, b = node.this, node.args["expression"]
    if not isinstance(a, exp.Column) or not isinstance(b, exp.Column):
        return None
    x, y = scope.resolve(a), scope.resolve(b)
    if x[0] == r and y[0] != r:
        x, y = y, x
    if y[0] != r or x[0] == r:
        return None
    return x, y


def _check_types(scope: Scope, pairs: Sequence[Pair]) -> None:
    for (li, lc), (ri, rc) in pairs:
        a, b = scope.sources[li].value(lc), scope.sources[ri].value(rc)
        if (a.type in NUMERIC) != (b.type in NUMERIC):
            raise refuse(
                f"join key {scope.sources[li].alias}.{lc} = {scope.sources[ri].alias}.{rc}",
                f"a {a.type} column equals a {b.type} column; join columns of one kind "
                "(numbers with numbers, text with text)",
            )


def _private_pair(
    scope: Scope, right: Source, pairs: Sequence[Pair], r: int, left: Sequence[Source]
) -> None:
    """Refuse a join of private tables unless it holds ``unit = unit``."""
    if right.unit is None or any(s.unit is None and not s.public for s in left):
        raise refuse(
            "join of two private tables when each row is its own unit",
            "rows of different individuals would be paired; join private tables only on a "
            "privacy-unit column",
        )
    if _on_unit(scope, right.unit, pairs):
        return
    same = any(s.table is not None and s.table == right.table for s in left)
    what = "private self-join" if same else "join of private tables"
    if pairs:
        raise refuse(
            f"{what} on a key other than the privacy unit",
            f"it pairs one individual's rows with another's; join private tables ON "
            f"a.{right.unit} = b.{right.unit}",
        )
    raise refuse(
        f"{what} without an equality on the privacy unit (a non-equi or cross join)",
        f"join private tables ON a.{right.unit} = b.{right.unit}",
    )


def _after_public(
    scope: Scope, pairs: Sequence[Pair], right: Source, left: Sequence[Source]
) -> None:
    """A private source joined to the one public table before it: m' = m·M."""
    if any(not s.public for s in left) or len(left) > 1:
        raise refuse("public tables joined before a private one", _PUBLIC_FIRST)
    m = _multiplicity(scope, [(li, lc) for (li, lc), _ in pairs], "public")
    scope.rows, scope.groups = right.rows * m, right.groups * m
    public = scope.sources[0]
    keys = [(li, lc) for (li, lc), _ in pairs if li == 0]
    scope.trail = [right.term(), _shared_key(public, keys, m)]
    scope.work = 0  # the public table alone held no unit's rows


def _shared_key(public: Source, keys: Sequence[tuple[int, str]], m: int) -> str:
    """A public table's factor of a join's bound, in words."""
    names = ", ".join(dict.fromkeys(c for _, c in keys)) or "its key"
    name = public.label if public.alias == public.label else f"{public.label} {public.alias}"
    return f"{name} on {names} (up to {m} rows share one key)"


def _on_unit(scope: Scope, unit: str, pairs: Sequence[Pair]) -> bool:
    """Some pair equals a private left source's unit to the right source's ``unit``."""
    for (li, lc), (_, rc) in pairs:
        s = scope.sources[li]
        left = s.unit if not s.public else None
        if left is not None and lc.lower() == left.lower() and rc.lower() == unit.lower():
            return True
    return False


def _multiplicity(scope: Scope, keys: Sequence[tuple[int, str]], side: str) -> int:
    """M: the least multiplicity over a public table's join key columns."""
    found = []
    for i, c in keys:
        s = scope.sources[i]
        spec = s.spec(c)
        if not s.public or spec is None:
            continue
        if spec.multiplicity is None:
            raise ParameterError(
                f"public column {s.label}.{c} has no measured multiplicity (how many rows "
                "share one value); register the population again to measure it."
            )
        found.append(spec.multiplicity)
    if not found:
        raise refuse(
            f"join with a {side} table without an equality on its columns",
            "join ON private.col = public.col (each private row then meets at most as many "
            "public rows as share one value)",
        )
    return min(found)


def _merge(scope: Scope, pairs: Sequence[Pair]) -> None:
    for (li, lc), (ri, rc) in pairs:
        if lc.lower() == rc.lower():
            scope.merged[(ri, rc.lower())] = scope.merged.get((li, lc.lower()), (li, lc))


def _public_keys(scope: Scope, pairs: Sequence[Pair]) -> None:
    """An inner join keeps only the rows whose key equals a public row's: a private text key
    joined to a public text column (whose distinct values registration measured, public
    facts) holds one of those values in the joined rows, so grouping by it needs no partition
    selection (the public keys are the released groups, a key without private rows a count of
    0 plus noise). A key already holding declared keys keeps those that are public values."""
    for (li, lc), (ri, rc) in pairs:
        public = scope.sources[ri].spec(rc)
        if public is None or public.categories is None or public.type != "category":
            continue
        i, c = scope.merged.get((li, lc.lower()), (li, lc))
        own = scope.column_value(i, c)
        if own.type not in ("text", "category"):
            continue
        allowed = set(public.categories)
        prior = own.categories
        scope.keys[(i, c.lower())] = (
            public.categories if prior is None else tuple(k for k in prior if k in allowed)
        )
