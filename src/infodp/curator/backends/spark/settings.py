"""Spark session settings: the defaults, ``<store>.spark.toml``, the environment, the flags.

>>> config_path("data/s.duckdb").name
's.duckdb.spark.toml'
"""

from __future__ import annotations

import os
import shutil
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from infodp.errors import InfodpError, ParameterError

__all__ = [
    "MASTER_ENV",
    "PINNED",
    "SparkUnavailable",
    "config_path",
    "require_spark",
    "spark_settings",
]

#: The environment variable naming the Spark master (``--spark-master`` wins over it).
MASTER_ENV = "INFODP_SPARK_MASTER"

#: Settings every infodp session starts from (the config file and ``--spark-conf`` win).
_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    # The bounded copies are private files (0600), like the DuckDB store.
    "spark.hadoop.fs.permissions.umask-mode": "077",
    # infodp draws its own progress bar (and none under --json).
    "spark.ui.showConsoleProgress": "false",
}


#: Settings fixed for every infodp session, whatever the file or the flags say: each one
#: stops a plan choice that follows the tables' sizes (file sizes, row counts measured at
#: run time), which are private for private tables, so one more person could flip a plan
#: and its run time. Spark 4's adaptive execution re-plans on runtime sizes (coalescing
#: partitions, splitting skewed ones, sort-merge to broadcast or shuffled-hash joins);
#: the broadcast threshold broadcasts a side smaller than the threshold on its file size
#: (a public table is broadcast by an explicit hint instead, its size being public);
#: ``preferSortMergeJoin=false`` picks shuffled-hash joins by size; the cost-based
#: optimiser and star-schema detection reorder joins by statistics; runtime Bloom filters
#: and dynamic partition pruning are injected when size estimates say they pay.
PINNED: dict[str, str] = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.join.preferSortMergeJoin": "true",
    "spark.sql.cbo.enabled": "false",
    "spark.sql.cbo.joinReorder.enabled": "false",
    "spark.sql.cbo.starSchemaDetection": "false",
    "spark.sql.cbo.planStats.enabled": "false",
    "spark.sql.optimizer.runtime.bloomFilter.enabled": "false",
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
}


class SparkUnavailable(InfodpError):
    """pyspark or Java is missing: the message names what to install."""


def require_spark() -> None:
    """Raise :class:`SparkUnavailable` unless pyspark and a Java runtime are installed."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailable(
            "the Spark backend needs pyspark 4 (which needs Java 17+): pip install 'infodp[spark]'"
        ) from None
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return
    if shutil.which("java") is None:
        raise SparkUnavailable(
            "the Spark backend needs a Java 17+ runtime and found no 'java' on PATH or in "
            "JAVA_HOME: install one (Debian/Ubuntu: apt-get install default-jre-headless)"
        )


def config_path(store: str | os.PathLike[str]) -> Path:
    """The Spark settings file of a store: ``<store>.spark.toml``.

    >>> config_path("data/s.duckdb").name
    's.duckdb.spark.toml'
    """
    return Path(str(store) + ".spark.toml")


def _flatten(table: Mapping[str, object], prefix: str = "") -> Iterator[tuple[str, object]]:
    for key, value in table.items():
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _from_file(path: Path) -> tuple[str | None, dict[str, str]]:
    """(master or None, spark.* settings) of a ``<store>.spark.toml``."""
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ParameterError(
            f'{path.name} is not valid TOML ({err}); it holds master = "..." and spark.* settings.'
        ) from None
    master: str | None = None
    settings: dict[str, str] = {}
    for key, value in _flatten(data):
        if key == "master":
            master = str(value)
        elif key.startswith("spark."):
            settings[key] = str(value).lower() if isinstance(value, bool) else str(value)
        else:
            raise ParameterError(f"{path.name}: key {key!r}", key, "'master' or a spark.* setting")
    return master, settings


def _flags(conf: Mapping[str, str] | Sequence[str]) -> dict[str, str]:
    items = conf.items() if isinstance(conf, Mapping) else (_pair(c) for c in conf)
    out: dict[str, str] = {}
    for key, value in items:
        if not key.startswith("spark."):
            raise ParameterError("--spark-conf", key, "a spark.* setting (KEY=VALUE)")
        out[key] = value
    return out


def spark_settings(
    store: str | os.PathLike[str] | None = None,
    *,
    master: str | None = None,
    conf: Mapping[str, str] | Sequence[str] = (),
) -> tuple[str, dict[str, str]]:
    """(master, settings) from the defaults, ``<store>.spark.toml``, the environment and
    the arguments, later ones winning, then :data:`PINNED` (a file or flag setting a pinned
    key to another value is refused, naming it).

    The file holds ``master = "spark://host:7077"`` and ``spark.*`` keys (TOML dotted keys
    or a ``[spark]`` table); ``conf`` is a mapping or ``KEY=VALUE`` strings.

    >>> spark_settings(master="local[2]", conf=["spark.sql.shuffle.partitions=2"])[1][
    ...     "spark.sql.shuffle.partitions"]
    '2'
    """
    chosen: str | None = None
    settings = dict(_DEFAULTS)
    if store is not None and str(store) != ":memory:" and config_path(store).is_file():
        chosen, from_file = _from_file(config_path(store))
        settings.update(from_file)
    _check_master(master)
    chosen = master or os.environ.get(MASTER_ENV) or chosen or "local[*]"
    settings.update(_flags(conf))
    _check_pinned(settings)
    settings.update(PINNED)
    return chosen, settings


def _check_pinned(settings: Mapping[str, str]) -> None:
    """Refuse a setting that would let plans follow private sizes (:data:`PINNED`)."""
    for key, value in settings.items():
        pinned = PINNED.get(key)
        if pinned is not None and value.strip().lower() != pinned:
            raise ParameterError(
                f"Spark setting {key}={value} is refused: infodp pins it to {pinned} because "
                "it lets query plans follow the tables' sizes, which are private (one more "
                "person could change a plan and its run time)."
            )


def _check_master(master: str | None) -> None:
    if master is not None and (not master.strip() or any(c.isspace() for c in master)):
        raise ParameterError(
            "--spark-master", master, "a Spark master URL (local[*], spark://HOST:PORT, yarn, …)"
        )


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ParameterError("--spark-conf", text, "KEY=VALUE (e.g. spark.executor.memory=4g)")
    return key.strip(), value.strip()
