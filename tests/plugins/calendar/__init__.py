"""Tests of ``plugins/tickwork_calendar``."""
