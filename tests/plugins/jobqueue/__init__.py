"""Tests of ``plugins/tickwork_jobqueue``."""
