"""Tests of ``plugins/tickwork_local``."""
