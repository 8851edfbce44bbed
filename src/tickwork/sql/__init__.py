"""The SQL side of tickwork: schema, the shared store, claim strategies, migrations."""

from __future__ import annotations

from .quiet import quiet_alembic

# Importing Alembic logs "setup plugin ..." at INFO; an application that configured logging
# before importing tickwork's stores should not see that.
with quiet_alembic():
    import alembic.command  # noqa: F401
