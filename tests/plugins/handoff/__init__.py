"""Tests of ``plugins/tickwork_handoff``."""
