"""Tests of ``plugins/tickwork_membership``."""
