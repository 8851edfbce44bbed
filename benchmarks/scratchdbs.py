"""Scratch databases for the benchmarks that launch node processes: an empty database made on
the PostgreSQL or MariaDB server of an admin URL, and dropped afterwards."""

from __future__ import annotations

import uuid


def _on_server(store: str, admin_url: str, postgres_sql: str, mysql_sql: str) -> None:
    if store == "postgres":
        import psycopg

        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(postgres_sql)  # type: ignore[arg-type]
    else:
        import pymysql

        conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", autocommit=True)
        with conn.cursor() as cur:
            cur.execute(mysql_sql)
        conn.close()


def scratch_database(store: str, admin_url: str, prefix: str) -> tuple[str, str]:
    """A new empty database named ``prefix`` and a random suffix on the server of ``admin_url``
    (``store``: ``postgres`` or ``mysql``): (its URL, its name)."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    _on_server(store, admin_url, f'CREATE DATABASE "{name}"', f"CREATE DATABASE `{name}`")
    return admin_url.rsplit("/", 1)[0] + "/" + name, name


def drop_database(store: str, admin_url: str, name: str) -> None:
    _on_server(store, admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f"DROP DATABASE IF EXISTS `{name}`")
