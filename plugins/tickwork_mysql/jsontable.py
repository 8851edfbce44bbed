"""A batch of rows inserted by one ``INSERT ... SELECT ... FROM JSON_TABLE(...)`` (the MySQL /
MariaDB :meth:`~tickwork.sql.features.Operations.insert_many`).

An executemany of a first start's 20,000 schedules spent most of its time in the client: PyMySQL
quotes every value of every row in Python (420,000 calls for 20,000 schedules, about half of the
sync's CPU), after SQLAlchemy processed each of them. Here a column whose value is the same in
every row is bound once, and the others travel as one JSON document, an array of rows, each an
array of the row's varying values as the executemany would have bound them (the columns' own bind
processing: times as epoch microseconds, JSON columns as their text), written by the C encoder of
the ``json`` module and quoted by the driver as one string. The server turns it back into rows
with ``JSON_TABLE`` (MySQL 8.0.4, MariaDB 10.6), every value as text, which the ``INSERT``
converts into its column as it converts an executemany's literal (strict mode refusing what does
not fit; MySQL's JSON type parsing a JSON column's text).

A batch the document cannot carry exactly (a float that is not finite, a value of a type JSON has
no form for) is an executemany, as it is on a server without ``JSON_TABLE``.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Insert, Table, bindparam, literal_column, select, text
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect

from tickwork.sql.features import alike_in_every_row

#: The first versions with ``JSON_TABLE``.
MARIADB_SINCE = (10, 6)
MYSQL_SINCE = (8, 0, 4)


def available(dialect: Dialect) -> bool:
    """Whether the server the dialect connected to has ``JSON_TABLE``."""
    version = dialect.server_version_info
    if not version:
        return False
    numbers = tuple(v for v in version if isinstance(v, int))
    return numbers >= (MARIADB_SINCE if getattr(dialect, "is_mariadb", False) else MYSQL_SINCE)


@functools.lru_cache(maxsize=64)
def statement(
    table: Table, columns: tuple[str, ...], varying: tuple[str, ...], skip_existing: bool, dialect: Dialect
) -> Insert:
    """``INSERT INTO table (columns) SELECT ... FROM JSON_TABLE(:rows, '$[*]' COLUMNS (...))``:
    a column alike in every row is bound once (``k_<name>``); the n-th item of a row of the
    document is the n-th ``varying`` column (named ``c<n>`` in the table function, so that no
    name of the table is ambiguous in the statement)."""
    # Every column as text, converted by the INSERT into the table's column: a typed column of
    # JSON_TABLE truncates a string silently (VARCHAR(5) made 'abcdefgh' 'abcde' on MariaDB
    # 10.11) and turns a value it cannot convert into NULL, where the INSERT refuses both as an
    # executemany's would (strict mode: "Data too long", "Incorrect integer value").
    spec = ", ".join(f"c{n} LONGTEXT PATH '$[{n}]' ERROR ON ERROR" for n in range(len(varying)))
    source = text(f"JSON_TABLE(:rows, '$[*]' COLUMNS ({spec})) AS jt").bindparams(bindparam("rows", type_=None))
    picked = [
        literal_column(f"jt.c{varying.index(name)}")
        if name in varying
        else bindparam(f"k_{name}", type_=table.c[name].type)
        for name in columns
    ]
    insert = mysql.insert(table).from_select(list(columns), select(*picked).select_from(source))
    if skip_existing:
        # As Operations.insert_ignore: only a duplicate key is skipped (not a truncation).
        key = next(iter(table.primary_key.columns))
        insert = insert.on_duplicate_key_update({key.name: key})
    return insert


def _processors(table: Table, columns: tuple[str, ...], dialect: Dialect) -> list[Callable[[Any], Any] | None]:
    return [table.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in columns]


def _varying(rows: Sequence[Mapping[str, Any]], columns: tuple[str, ...]) -> tuple[str, ...]:
    """The columns not alike in every row; at least one, which gives the document its rows."""
    return tuple(c for c in columns if not alike_in_every_row(rows, c)) or columns[:1]


def document(
    table: Table, rows: Sequence[Mapping[str, Any]], dialect: Dialect
) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, Any]] | None:
    """The batch's columns (the first row's, in order), those that vary, and the statement's
    parameters: the varying columns of every row as one JSON document (``rows``), each other
    column once (``k_<name>``). ``None`` when JSON cannot carry every value exactly (the caller
    then runs an executemany)."""
    columns = tuple(rows[0])
    varying = _varying(rows, columns)
    processors = _processors(table, varying, dialect)
    out: list[list[Any]] = []
    for row in rows:
        values: list[Any] = []
        for name, process in zip(varying, processors, strict=True):
            value = row[name]
            if process is not None:
                value = process(value)
            if value is None or type(value) in (str, int):
                values.append(value)
            elif type(value) is bool:
                values.append(int(value))
            elif type(value) is float and math.isfinite(value):
                values.append(value)
            else:  # bytes, Decimal, a float that is not finite, ...: not exactly JSON
                return None
        out.append(values)
    parameters: dict[str, Any] = {f"k_{name}": rows[0][name] for name in columns if name not in varying}
    parameters["rows"] = json.dumps(out, ensure_ascii=False, allow_nan=False)
    return columns, varying, parameters
