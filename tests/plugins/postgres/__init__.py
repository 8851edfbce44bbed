"""Tests of ``plugins/tickwork_postgres``."""
