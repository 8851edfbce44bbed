"""Tests of ``plugins/tickwork_cron``."""
