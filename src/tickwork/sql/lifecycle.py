"""The schema's lifecycle: opening a database (creating an empty one's schema where the store
may), migrating it, and telling its revision, for :class:`~tickwork.sql.storecore.SQLCore`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from sqlalchemy.exc import DBAPIError, OperationalError

from ..errors import SchemaOutdatedError, StoreError
from . import migrations  # first: it imports Alembic quietly
from .quiet import quiet_alembic

with quiet_alembic():
    from alembic.util.exc import CommandError

if TYPE_CHECKING:
    from .storecore import SQLCore

log = logging.getLogger("tickwork.store")


def open_schema(store: SQLCore, *, check_schema: bool) -> None:
    """See :meth:`tickwork.abc.Store.open`."""
    current, head = revisions(store)
    if current is None and store.create_empty:
        log.info("creating the tickwork schema in the empty %s", store.describe())
        upgrade(store)
        current = head
    if check_schema and current != head:
        raise SchemaOutdatedError(
            f"the schema of {store.describe()} is at revision {current or 'none (empty database)'}, "
            f"this tickwork needs {head}; run `tickwork db upgrade` to migrate it"
        )


def upgrade(store: SQLCore) -> None:
    try:
        with store.connected_engine().begin() as conn:
            migrations.upgrade(conn)
    except (OperationalError, DBAPIError) as exc:
        raise StoreError(f"cannot migrate {store.describe()}: {exc.orig or exc}") from exc
    except CommandError as exc:  # e.g. stamped with a revision this tickwork does not know
        raise StoreError(f"cannot migrate {store.describe()}: {exc}") from exc


def revisions(store: SQLCore) -> tuple[str | None, str]:
    try:
        with store.connected_engine().connect() as conn:
            current = migrations.current_revision(conn)
    except (OperationalError, DBAPIError) as exc:
        raise StoreError(f"cannot open {store.describe()}: {exc.orig or exc}") from exc
    return current, migrations.head_revision()


def upgrade_sql(store: SQLCore) -> str:
    # A database that does not exist yet gets the whole schema, and is not created by asking.
    current = revisions(store)[0] if store.database_exists() else None
    try:
        return migrations.upgrade_sql(store.database_label, current)
    except CommandError as exc:
        raise StoreError(f"cannot migrate {store.describe()}: {exc}") from exc
