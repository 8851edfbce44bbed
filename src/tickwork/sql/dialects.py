"""What the shared schema needs to know about a database, declared by the store plugin that
brings the database — so the core never branches on a dialect's name.

A store plugin calls :func:`declare` at import with its SQLAlchemy dialect class; the shared
column types look the declaration up by the dialect instance they are handed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from sqlalchemy import Dialect


@dataclass(frozen=True)
class SQLTraits:
    """How a database stores what the shared schema declares.

    :param epoch_micros: store :class:`~tickwork.sql.schema.UTCDateTime` columns as BIGINT
        microseconds since the Unix epoch (databases without a timezone-aware timestamp type:
        integers compare exactly and cheaply, and no session time zone can shift them)
    """

    epoch_micros: bool = False


#: A database nobody declared: timezone-aware timestamps, as PostgreSQL has them.
DEFAULT = SQLTraits()

_declared: dict[type[Dialect], SQLTraits] = {}
_resolved: dict[type[Dialect], SQLTraits] = {}
_lock = threading.Lock()
_plugins_loaded = False


def declare(dialect: type[Dialect], traits: SQLTraits) -> None:
    """Declare the traits of ``dialect`` and its subclasses (e.g. every driver of a database)."""
    with _lock:
        _declared[dialect] = traits
        _resolved.clear()


def traits_of(dialect: Dialect) -> SQLTraits:
    """The declared traits of ``dialect``'s database (:data:`DEFAULT` when none is declared).

    Hot: called for every bound time value, hence the cache by dialect class.
    """
    kind = type(dialect)
    found = _resolved.get(kind)
    if found is not None:
        return found
    match = _match(kind)
    if match is None:
        # Code that touches the schema without a store (the jobqueue worker, a bare alembic run)
        # may not have imported the plugin that declares this database yet.
        _load_plugins()
        match = _match(kind)
    with _lock:
        _resolved[kind] = match or DEFAULT
    return match or DEFAULT


def _match(kind: type[Dialect]) -> SQLTraits | None:
    with _lock:
        for declared, traits in _declared.items():
            if issubclass(kind, declared):
                return traits
    return None


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from ..plugin.manager import default_manager  # deferred: the plugins import this module

    stores = default_manager().stores
    # Store plugins register their classes deferred: import each (its module declares its
    # database); one whose driver is not installed declares nothing this process could use.
    for name in stores.names():
        try:
            stores.get(name)
        except ImportError:
            continue
