"""Ledger times as analysts see them: to the second, never finer.

An entry's ``created`` (before the reservation) and ``finished`` (after the release) bracket the
query's run time. To the millisecond they would let an analyst read how long the data took to
aggregate, through any network jitter; the run time is meant to depend on the query, the
declared schema and the table's size only, and a coarse clock keeps what is left of it (the
scan of a larger table) from being read query by query. The ledger keeps its exact times for
the data owner's audit; every view an analyst gets passes through :func:`coarse_entry`.

>>> coarse_time("2026-11-27T08:26:34.517+00:00")
'2026-11-27T08:26:34+00:00'
>>> coarse_entry({"id": 1, "created": "2026-11-27T08:26:34.517+00:00", "finished": None})
{'id': 1, 'created': '2026-11-27T08:26:34+00:00', 'finished': None}
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

__all__ = ["coarse_entry", "coarse_time"]


def coarse_time(stamp: str | None) -> str | None:
    """``stamp`` (ISO 8601) cut down to the whole second it falls in (None stays None)."""
    if stamp is None:
        return None
    return _dt.datetime.fromisoformat(stamp).replace(microsecond=0).isoformat()


def coarse_entry(entry: Mapping[str, object]) -> dict[str, object]:
    """A copy of a ledger entry's dict (``Entry.to_dict()``, a synopsis listing) with its
    times (text or None) to the second."""
    out = dict(entry)
    for field in ("created", "finished"):
        stamp = out.get(field)
        if isinstance(stamp, str):
            out[field] = coarse_time(stamp)
    return out
