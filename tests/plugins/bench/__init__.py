"""Tests of ``plugins/tickwork_bench``."""
