"""Tests of ``plugins/tickwork_sentry``."""
