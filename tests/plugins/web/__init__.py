"""Tests of ``plugins/tickwork_web``."""
