"""Hot statements, built once and executed the way their store's engine thread can afford.

A store runs a handful of statements for every batch of fires: the claim, its run rows, the
releases and the run ends. :class:`Prepared` executes such a statement through SQLAlchemy, like
every other statement. :class:`DirectPrepared` compiles it once (SQLAlchemy still builds and
compiles the SQL, with bound parameters) and executes the compiled string on the transaction's own
DBAPI connection, converting parameters and results with the same type processors SQLAlchemy
would.

On SQLite the node's engine thread is the bottleneck of a burst, and frames in SQLAlchemy were a
third of that thread's Python there, most of it per-execution machinery (execution context,
parameter processing, result objects); see docs/benchmarks.md, "SQLite bursts, fourth round".
Stores on a database server keep :class:`Prepared`: tried on PostgreSQL, direct execution saved
5 % of a store-level claim-and-finish loop and nothing measurable under spread load, since the
database is the bottleneck there, and SQLAlchemy's own handling of a dropped connection is worth
more than that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError

Row = Sequence[Any]


def driver_execute(conn: Connection, sql: str, parameters: Sequence[Any], error: type[Exception]) -> list[Any]:
    """Run ``sql`` on ``conn``'s driver connection, in its transaction; its rows, if any.

    What ``conn.execute`` would also do: engine ``before_cursor_execute`` listeners see the
    statement, and a driver error (an instance of ``error``, the driver's base class) is raised as
    SQLAlchemy's (``DBAPIError.instance``), so stores handle and retry it as any other.
    """
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    dispatch = conn.dispatch
    context = DirectExecution(conn.dialect, cursor, sql, parameters)
    dispatch.before_cursor_execute(conn, cursor, sql, parameters, context, False)
    try:
        cursor.execute(sql, parameters)
        rows = cursor.fetchall() if cursor.description else []
    except error as exc:
        raise DBAPIError.instance(sql, parameters, exc, error) from exc
    finally:
        cursor.close()
    dispatch.after_cursor_execute(conn, cursor, sql, parameters, context, False)
    return rows


class DirectExecution:
    """The execution context listeners get for a statement run on the driver connection.

    SQLAlchemy's own context is what direct execution saves, but listeners (sentry-sdk's
    SQLAlchemy integration, OpenTelemetry's) keep per-statement state on the context they are
    given between ``before_cursor_execute`` and ``after_cursor_execute``, and read the public
    attributes of SQLAlchemy's (``dialect`` for the parameter style): with ``None`` they raised on
    every statement. As with ``conn.execute``, a statement that fails gets no ``after`` event.
    """

    def __init__(self, dialect: Dialect, cursor: Any, statement: str, parameters: Sequence[Any]) -> None:
        self.dialect = dialect
        self.cursor = cursor
        self.statement = statement
        self.parameters = [parameters]
        self.executemany = False


class Prepared:
    """A statement executed through SQLAlchemy (the default)."""

    def __init__(self, statement: Any) -> None:
        self.statement = statement

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> Sequence[Row]:
        """Execute in ``conn``'s transaction; the result rows (by position), if any."""
        result = conn.execute(self.statement, params)
        return result.all() if result.returns_rows else []

    def mappings(self, conn: Connection, params: Mapping[str, Any]) -> Sequence[Mapping[Any, Any]]:
        """Execute in ``conn``'s transaction; the result rows by column name."""
        return conn.execute(self.statement, params).mappings().all()

    def scalars(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        """Execute in ``conn``'s transaction; the first column of every result row."""
        return list(conn.scalars(self.statement, params).all())


class DirectPrepared(Prepared):
    """A statement compiled once for ``dialect`` and executed on the DBAPI connection.

    Only for a dialect with a positional parameter style (SQLite's ``qmark``) and statements
    without "expanding" parameters (a list is bound as one value: see ``one_of``). Engine
    ``before_cursor_execute`` listeners still see each execution (the benchmark counts
    statements with one); driver errors are raised as SQLAlchemy's, like ``conn.execute``'s.

    :raises ValueError: for a statement or dialect this cannot execute directly
    """

    def __init__(self, statement: Any, dialect: Dialect) -> None:
        super().__init__(statement)
        if not dialect.positional:
            raise ValueError(f"direct execution needs a positional parameter style, not {dialect.paramstyle!r}")
        compiled = statement.compile(dialect=dialect)
        self.sql: str = compiled.string
        if "__[POSTCOMPILE" in self.sql:
            raise ValueError(f"direct execution cannot expand list parameters: {self.sql}")
        self._binds = [
            (name, compiled.binds[name], compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect))
            for name in compiled.positiontup or ()
        ]
        columns = list(getattr(statement, "exported_columns", ()))
        self.keys: tuple[str, ...] = tuple(c.key for c in columns)
        self._convert: list[tuple[int, Callable[[Any], Any]]] = []
        for i, column in enumerate(columns):
            process = column.type.dialect_impl(dialect).result_processor(dialect, None)
            if process is not None:
                self._convert.append((i, process))
        self._dbapi_error: type[Exception] = dialect.loaded_dbapi.Error

    def _parameters(self, params: Mapping[str, Any]) -> list[Any]:
        values = []
        for name, bind, process in self._binds:
            if name in params:
                value = params[name]
            elif bind.required and bind.callable is None:
                raise KeyError(f"no value for the bound parameter {name!r} of: {self.sql}")
            else:
                value = bind.effective_value
            values.append(value if process is None else process(value))
        return values

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> list[Row]:
        rows = driver_execute(conn, self.sql, self._parameters(params), self._dbapi_error)
        if not self._convert or not rows:
            return rows
        convert = self._convert
        out: list[Row] = []
        for row in rows:
            converted = list(row)
            for i, process in convert:
                converted[i] = process(converted[i])
            out.append(converted)
        return out

    def mappings(self, conn: Connection, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        keys = self.keys
        return [dict(zip(keys, row, strict=True)) for row in self.rows(conn, params)]

    def scalars(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        return [row[0] for row in self.rows(conn, params)]
