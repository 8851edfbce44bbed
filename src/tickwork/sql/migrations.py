"""Running the Alembic migrations shipped with tickwork against a live connection."""

from __future__ import annotations

import functools
import io
from pathlib import Path

from sqlalchemy import Connection, inspect

from .quiet import quiet_alembic as _quiet
from .schema import metadata

# Importing Alembic logs "setup plugin ..." at INFO; an application that configured logging
# before opening a store should not see that.
with _quiet():
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

VERSION_TABLE = "tickwork_alembic_version"


def script_location() -> Path:
    """The directory holding ``env.py`` and ``versions/`` (the repository's ``alembic/``)."""
    package = Path(__file__).resolve().parent.parent
    # A wheel ships alembic/ as tickwork/_migrations; a source checkout has it at the top level.
    for candidate in (package / "_migrations", package.parent.parent / "alembic"):
        if (candidate / "env.py").is_file():
            return candidate
    raise RuntimeError(f"tickwork's migrations are missing (looked in {package / '_migrations'})")


def _config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


@functools.cache
def head_revision() -> str:
    """The newest revision this tickwork ships (read once a process: every store's open checks
    it, and reading the scripts took ~50 ms each time)."""
    with _quiet():
        head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None, "no migration revisions found"
    return head


def current_revision(connection: Connection) -> str | None:
    with _quiet():
        context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
        return context.get_current_revision()


def upgrade(connection: Connection, revision: str = "head") -> None:
    """Migrate the database of ``connection`` to ``revision``. A database holding none of
    tickwork's tables that is to reach the head gets the whole schema at once instead
    (:func:`create_head`); any other runs the revisions one by one."""
    with _quiet():
        if revision == "head" and is_empty(connection):
            create_head(connection)
        else:
            command.upgrade(_config(connection), revision)


def is_empty(connection: Connection) -> bool:
    """No revision stamped and none of the declared tables there: nothing a migration could
    have to carry over (a version table left empty by a downgrade to base counts as empty)."""
    if current_revision(connection) is not None:
        return False
    present = set(inspect(connection).get_table_names())
    return not present.intersection(metadata.tables)


def create_head(connection: Connection) -> None:
    """Create the head's schema in an empty database from the declared metadata, then stamp the
    head revision (Alembic's "create_all, then stamp" recipe): the revisions one by one took
    0.3-1.8 s on PostgreSQL and 1.3-3.4 s on MariaDB on a loaded machine, this 0.2-0.4 s and
    0.1-1.7 s (docs/benchmarks.md). ``tests/sql/test_migrations.py`` checks the two give the
    same schema on every database. In the caller's transaction, where the database has
    transactional DDL."""
    metadata.create_all(connection, checkfirst=False)
    command.stamp(_config(connection), "head")


def downgrade(connection: Connection, revision: str = "base") -> None:
    with _quiet():
        command.downgrade(_config(connection), revision)


def upgrade_sql(sqlalchemy_dialect: str, current: str | None) -> str:
    """The SQL that migrates a database of ``sqlalchemy_dialect`` from ``current`` (``None``: empty) to
    the head revision, as text (Alembic's offline mode); empty when there is nothing to do."""
    if current == head_revision():
        return ""
    buffer = io.StringIO()
    cfg = Config(output_buffer=buffer)
    cfg.set_main_option("script_location", str(script_location()))
    cfg.attributes["offline_dialect"] = sqlalchemy_dialect
    with _quiet():
        command.upgrade(cfg, "head" if current is None else f"{current}:head", sql=True)
    return buffer.getvalue()
