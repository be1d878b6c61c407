"""Reading a declaration: from a mapping, YAML/JSON text or a ``.yaml``/``.json`` file, validated
by :mod:`infodp.curator.declaration.models` into a
:class:`~infodp.curator.declaration.schema.DatasetSchema`.

It sits above both: the declaration's rules read the schema's records, and reading a source
needs the rules, so the schema module itself imports neither (a one-way import graph).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from infodp.curator.declaration.schema import DatasetSchema
from infodp.errors import ParameterError

__all__ = ["SchemaSource", "load_schema"]


#: What :func:`load_schema` reads: a declaration as a mapping, YAML/JSON text or a file path.
SchemaSource = Mapping[str, object] | str | Path


def load_schema(source: SchemaSource) -> DatasetSchema:
    """Read a schema from a dict, YAML/JSON text, or a path to a ``.yaml``/``.json`` file.

    >>> s = load_schema('''
    ... table: people
    ... privacy_unit: person_id
    ... max_rows_per_unit: 2
    ... columns:
    ...   income: {type: float, bounds: [0, 500000], nulls: drop}
    ...   region: {type: category, categories: [north, south]}
    ... ''')
    >>> (s.privacy_unit, s.max_rows_per_unit, s.column("region").categories)
    ('person_id', 2, ('north', 'south'))
    >>> load_schema({"table": "t", "privacy_unit": "row", "columns": {"x": {"type": "blob"}}})
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: columns.x.type must be one of int, float, category, text, bool; got 'blob'.
    """  # noqa: E501
    # Lazy: pydantic (the declaration's validator) loads only when a declaration is read, not
    # in every query process (tests/cli/test_lazy.py).
    from infodp.curator.declaration.models import declared_schema

    return declared_schema(_declaration(source))


def _is_file(source: SchemaSource) -> bool:
    """A path (or a one-line string naming a ``.yaml``/``.yml``/``.json`` file)."""
    return isinstance(source, Path) or (
        isinstance(source, str)
        and "\n" not in source
        and source.endswith((".yaml", ".yml", ".json"))
    )


def _declaration(source: SchemaSource) -> Mapping[object, object]:
    """The declaration as a mapping, read from a file or YAML/JSON text when it is one."""
    if _is_file(source):
        path = Path(str(source))
        if not path.is_file():
            raise ParameterError("schema", str(source), "an existing YAML or JSON file")
        source = path.read_text()
    data: object = _yaml(source) if isinstance(source, str) else source
    if not isinstance(data, Mapping):
        raise ParameterError(
            "schema", type(data).__name__, "a mapping with keys table, privacy_unit, columns"
        )
    return data


def _yaml(text: str) -> object:
    r"""YAML/JSON text as data; a mapping with a key twice (two ``visits:`` under ``tables:``,
    two columns of one name) is refused naming the key, never silently the last one kept.

    >>> _yaml("columns:\n  x: {type: int}\n  x: {type: text}\n")
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: schema must be a declaration with each key once in a mapping (line 3); got 'x'.
    """  # noqa: E501
    import yaml  # type: ignore[import-untyped]  # YAML is a superset of JSON

    class UniqueKeys(yaml.SafeLoader):  # type: ignore[misc]
        def construct_mapping(
            self, node: yaml.MappingNode, deep: bool = False
        ) -> dict[object, object]:
            seen: set[object] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, (str, int, float, bool)) and key in seen:
                    raise ParameterError(
                        "schema",
                        key,
                        "a declaration with each key once in a mapping "
                        f"(line {key_node.start_mark.line + 1})",
                    )
                seen.add(key)
            mapping: dict[object, object] = super().construct_mapping(node, deep=deep)
            return mapping

    try:
        loaded: object = yaml.load(text, Loader=UniqueKeys)  # a SafeLoader
    except yaml.YAMLError as err:
        raise ParameterError(f"schema is not valid YAML/JSON: {str(err).splitlines()[0]}") from None
    return loaded
