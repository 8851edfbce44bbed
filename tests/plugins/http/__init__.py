"""Tests of ``plugins/tickwork_http``."""
