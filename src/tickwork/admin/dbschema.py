"""``tickwork db current`` and ``tickwork db upgrade``: the schema revision of a configured store,
migrating it, and saying what was done."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..abc import Store
from ..config.files import Config
from ..errors import DatabaseMissingError
from ..plugin.assembly import build_store
from ..plugin.manager import plugin_manager_for
from .api import missing_message


def describe_store(config: Config) -> str:
    return _describe(_store(config))


def _store(config: Config) -> Store:
    return build_store(config, plugin_manager_for(config))


def _describe(store: Store) -> str:
    return store.describe()


@dataclass(frozen=True)
class SchemaStatus:
    store: str
    current: str | None
    head: str

    @property
    def latest(self) -> bool:
        return self.current == self.head

    def sentence(self) -> str:
        if self.latest:
            return f"{self.store} is at revision {self.head} (the latest)"
        if self.current is None:
            return f"{self.store} has no tickwork schema yet; `tickwork db upgrade` creates revision {self.head}"
        return (
            f"{self.store} is at revision {self.current}; this tickwork needs {self.head}: "
            "run `tickwork db upgrade` (or `tickwork db upgrade --sql` for the SQL)"
        )

    def as_json(self) -> dict[str, Any]:
        return {"store": self.store, "current": self.current, "head": self.head, "latest": self.latest}


def schema_status(config: Config) -> SchemaStatus:
    """The revision of the configured database; never creates one (exit 1 from the CLI if missing)."""
    store = _store(config)
    try:
        if not store.database_exists():
            raise DatabaseMissingError(missing_message(config, store))
        current, head = store.schema_revisions()
    finally:
        store.close()
    return SchemaStatus(_describe(store), current, head)


def upgrade_with_report(config: Config, *, sql_only: bool) -> str:
    """Migrate the configured database (creating it if needed) and return one sentence saying what
    happened; with ``sql_only``, change nothing and return the SQL of the pending migrations."""
    store = _store(config)
    try:
        if sql_only:
            return store.upgrade_sql()
        before = store.schema_revisions()[0] if store.database_exists() else None
        store.upgrade()
        after = store.schema_revisions()[0]
    finally:
        store.close()
    what = _describe(store)
    if before == after:
        return f"{what} is already at the latest schema (revision {after}); nothing to do"
    if before is None:
        return f"created the tickwork schema in {what} (revision {after})"
    return f"migrated {what} from revision {before} to {after}"
