"""The SQL side of tickwork: schema, the shared store, claim strategies, migrations.

Alembic is imported by :mod:`.migrations` only, when a migration is run or the schema's revision
is checked: a command that opens no store (``tickwork --help``, ``config check``) never loads it.
"""

from __future__ import annotations
