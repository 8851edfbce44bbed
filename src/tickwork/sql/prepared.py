"""Hot statements, built once and executed the way their store's engine thread can afford.

A store runs a handful of statements for every batch of fires: the claim, its run rows, the
releases and the run ends. :class:`Prepared` executes such a statement through SQLAlchemy, like
every other statement. :class:`DirectPrepared` compiles it once (SQLAlchemy still builds and
compiles the SQL, with bound parameters) and executes the compiled string on the transaction's own
DBAPI connection, converting parameters and results with the same type processors SQLAlchemy
would. On SQLite the node's engine thread is the bottleneck of a burst, and SQLAlchemy's
per-execution machinery (execution context, parameter processing, result objects) was about a
fifth of that thread's time (docs/benchmarks.md, "SQLite bursts, fourth round"). Stores on a
database server keep :class:`Prepared`: there the database is the bottleneck, and SQLAlchemy's
handling of a dropped connection (invalidating the pool) matters more than its Python.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError

Row = Sequence[Any]


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

    Only for statements without "expanding" parameters (a list is bound as one value: see
    ``one_of``). Engine
    ``before_cursor_execute`` listeners still see each execution (the benchmark counts
    statements with one); driver errors are raised as SQLAlchemy's, like ``conn.execute``'s.

    :raises ValueError: for a statement or dialect this cannot execute directly
    """

    def __init__(self, statement: Any, dialect: Dialect) -> None:
        super().__init__(statement)
        compiled = statement.compile(dialect=dialect)
        self.sql: str = compiled.string
        if "__[POSTCOMPILE" in self.sql:
            raise ValueError(f"direct execution cannot expand list parameters: {self.sql}")
        if compiled.escaped_bind_names:
            raise ValueError(f"direct execution needs plain parameter names: {sorted(compiled.escaped_bind_names)}")
        self._positional = dialect.positional
        names = compiled.positiontup if dialect.positional else list(compiled.binds)
        self._binds = [
            (name, compiled.binds[name], compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect))
            for name in names or ()
        ]
        self._columns = list(getattr(statement, "exported_columns", ()))
        self.keys: tuple[str, ...] = tuple(c.key for c in self._columns)
        #: Result converters by column position, made at the first execution: some depend on the
        #: type the driver reports (PostgreSQL's numeric types).
        self._convert: list[tuple[int, Callable[[Any], Any]]] | None = None
        self._dialect = dialect
        self._dbapi_error: type[Exception] = dialect.loaded_dbapi.Error

    def _parameters(self, params: Mapping[str, Any]) -> list[Any] | dict[str, Any]:
        values = []
        for name, bind, process in self._binds:
            if name in params:
                value = params[name]
            elif bind.required and bind.callable is None:
                raise KeyError(f"no value for the bound parameter {name!r} of: {self.sql}")
            else:
                value = bind.effective_value
            values.append(value if process is None else process(value))
        if self._positional:
            return values
        return {name: value for (name, _, _), value in zip(self._binds, values, strict=True)}

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> list[Row]:
        values = self._parameters(params)
        dbapi = conn.connection.dbapi_connection
        cursor = dbapi.cursor()  # type: ignore[union-attr]
        conn.dispatch.before_cursor_execute(conn, cursor, self.sql, values, None, False)
        try:
            cursor.execute(self.sql, values)
            description = cursor.description
            rows: list[Any] = cast(list[Any], cursor.fetchall()) if description else []
            convert = self._convert
            if convert is None:
                convert = self._convert = self._converters(description or ())
        except self._dbapi_error as exc:
            # As Connection.execute would: a connection the server dropped is invalidated, so the
            # pool replaces it and the store's retry (transient_retry) runs on a fresh one.
            gone = self._dialect.is_disconnect(exc, dbapi, cursor)  # type: ignore[arg-type]
            if gone:
                conn.invalidate(exc)
            raise DBAPIError.instance(
                self.sql, values, exc, self._dbapi_error, connection_invalidated=gone, dialect=self._dialect
            ) from exc
        finally:
            cursor.close()
        if not convert or not rows:
            return rows
        out: list[Row] = []
        for row in rows:
            converted = list(row)
            for i, process in convert:
                converted[i] = process(converted[i])
            out.append(converted)
        return out

    def _converters(self, description: Sequence[Any]) -> list[tuple[int, Callable[[Any], Any]]]:
        convert = []
        for i, (column, described) in enumerate(zip(self._columns, description, strict=True)):
            process = column.type.dialect_impl(self._dialect).result_processor(self._dialect, described[1])
            if process is not None:
                convert.append((i, process))
        return convert

    def mappings(self, conn: Connection, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        keys = self.keys
        return [dict(zip(keys, row, strict=True)) for row in self.rows(conn, params)]

    def scalars(self, conn: Connection, params: Mapping[str, Any]) -> list[Any]:
        return [row[0] for row in self.rows(conn, params)]
