"""A batch of rows inserted by one ``INSERT ... SELECT FROM unnest(...)`` (the PostgreSQL
:meth:`~tickwork.sql.features.Operations.insert_many`).

An executemany sends one INSERT per row: SQLAlchemy processes every parameter of every row,
psycopg's pipeline binds and executes each one, and the server plans and runs each on its own. A
first start's sync of 20,000 declared jobs spent most of its time there (docs/benchmarks.md,
"First start: one statement per batch"). Here the server builds the rows from a few parameters:

- a column whose value is the same in every row of the batch is bound once, as a scalar;
- a JSON column that varies (and holds no ``None``) is bound as one JSON array of its values,
  whose elements are joined to the rows by their position: psycopg writes an array parameter in
  PostgreSQL's text format, escaping every ``"`` of every JSON value with a regular expression
  (a batch of version rows: 2 million substitutions for 20,000 definitions, slower than the
  executemany);
- every other column that varies is bound as an array (``unnest``).

The columns keep their SQLAlchemy types: the arrays' items and the scalars are processed exactly
as the executemany's parameters would be (UTCDateTime, JSON), and the JSON arrays are written
with the engine's serializer.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import JSON, ColumnElement, Insert, Table, bindparam, func, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import ARRAY

from tickwork.sql import jsontext
from tickwork.sql.features import alike_in_every_row
from tickwork.sql.jsontext import Encoded

Split = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def split(table: Table, rows: Sequence[Mapping[str, Any]]) -> Split | None:
    """The columns of ``rows`` (in the first row's order), those of them bound as arrays, and
    those bound as JSON arrays; the rest are bound once. ``None`` when the batch cannot be one
    statement: a column to bind as an array holds values of two Python types (``1`` and
    ``True``), which psycopg cannot put in one array.

    A column varies unless :func:`~tickwork.sql.features.alike_in_every_row`."""
    first = rows[0]
    arrays: list[str] = []
    documents: list[str] = []
    for column in first:
        if alike_in_every_row(rows, column):
            continue
        values = [row[column] for row in rows]
        if isinstance(table.c[column].type, JSON):
            # JSON values are processed into one kind of item whatever their Python type.
            (documents if None not in values else arrays).append(column)
            continue
        if len({type(v) for v in values if v is not None}) > 1:
            return None
        arrays.append(column)
    if not arrays and len(rows) > 1:  # the rows' count comes from the arrays: at least one
        column = next(c for c in first if c not in documents)
        if len({type(row[column]) for row in rows}) > 1:
            return None
        arrays.append(column)
    return tuple(first), tuple(arrays), tuple(documents)


@functools.lru_cache(maxsize=64)
def statement(
    table: Table, columns: tuple[str, ...], arrays: tuple[str, ...], documents: tuple[str, ...], skip_existing: bool
) -> Insert:
    """``INSERT INTO table (columns) SELECT ...``: an array column bound as ``a_<name>``, a JSON
    array as ``j_<name>``, every other column as ``k_<name>`` (a scalar)."""
    picked: dict[str, ColumnElement[Any]] = {}
    source = None
    # The rows' positions, under a name no column of the table has.
    at = "ordinality"
    while at in table.c:
        at += "_"
    if arrays:
        # dimensions=1: a JSON value that is itself a list is one item, not a nested array.
        bound = [bindparam(f"a_{c}", type_=ARRAY(table.c[c].type, dimensions=1)) for c in arrays]
        rows = func.unnest(*bound).table_valued(*arrays, with_ordinality=at).render_derived()
        picked.update({c: rows.c[c] for c in arrays})
        source = select().select_from(rows)
        for c in documents:
            values = (
                func.json_array_elements(bindparam(f"j_{c}", type_=JSON))
                .table_valued("value", with_ordinality=at)
                .render_derived(name=f"j_{c}")
            )
            source = source.join_from(rows, values, values.c[at] == rows.c[at])
            picked[c] = values.c.value
    for c in columns:
        if c not in picked:
            picked[c] = bindparam(f"k_{c}", type_=table.c[c].type)
    query = source.add_columns(*[picked[c] for c in columns]) if source is not None else select(*picked.values())
    insert = postgresql.insert(table).from_select(list(columns), query)
    return insert.on_conflict_do_nothing() if skip_existing else insert


def parameters(
    rows: Sequence[Mapping[str, Any]], columns: tuple[str, ...], arrays: tuple[str, ...], documents: tuple[str, ...]
) -> dict[str, Any]:
    first = rows[0]
    out = {f"k_{c}": first[c] for c in columns if c not in arrays and c not in documents}
    out.update({f"a_{c}": [row[c] for row in rows] for c in arrays})
    for c in documents:
        texts = [v.text if isinstance(v, Encoded) else jsontext.dumps(v) for v in (row[c] for row in rows)]
        out[f"j_{c}"] = Encoded("[" + ",".join(texts) + "]")
    return out
