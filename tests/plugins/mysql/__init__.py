"""Tests of ``plugins/tickwork_mysql``."""
