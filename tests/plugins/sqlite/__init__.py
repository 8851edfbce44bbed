"""Tests of ``plugins/tickwork_sqlite``."""
