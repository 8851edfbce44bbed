"""The database servers of the test suite: one way to get them, a provider per database.

``base`` holds everything the databases share (which server to use, the throwaway server's life,
a fresh database per test); ``postgres`` and ``mysql`` hold only what differs, and are pytest
plugins providing ``postgres_server``/``postgres_url`` and ``mysql_server``/``mysql_url``;
``configs`` provides ``config_for``, a tickwork configuration for any backend on a fresh database.
"""
