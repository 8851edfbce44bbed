"""Tests of ``plugins/tickwork_notify``."""
