"""Tests of ``plugins/tickwork_interval``."""
