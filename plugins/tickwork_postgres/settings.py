"""The options of ``[store] plugin = "postgres"``, declared once (importable without psycopg)."""

from __future__ import annotations

from tickwork.config import URL
from tickwork.sql.settings import ClaimChoice, ServerStoreSettings


class PostgresSettings(ServerStoreSettings):
    """``[store]`` with ``plugin = "postgres"`` (docs/configuration.md#store-plugin--postgres)."""

    url = URL(
        schemes=("postgresql", "postgres", "postgresql+psycopg"),
        example="postgresql://user:password@host:port/dbname",
        help="`postgresql://user:password@host:port/dbname` (`postgres://` is accepted; the psycopg 3 driver is "
        "always used).",
        details='Put the password in an environment variable: `"postgresql://app:${PGPASSWORD}@db/app"`. A '
        "malformed URL is refused with an error naming the part that is wrong (`the port of the database URL is "
        "not a number`, `the user or password of the database URL holds an '@'; write it as %40`), never the URL "
        "itself, which holds the expanded password. libpq's query parameters work too (`?sslmode=require`); a "
        "password given there (`?password=`, `?sslpassword=`) is masked like the user info's wherever the URL is "
        "shown.",
    )
    claim = ClaimChoice("postgresql", ("skip-locked", "optimistic", "unique-fire", "advisory", "mark"))
