"""Tests of ``plugins/tickwork_rq``."""
