"""Tests of ``plugins/tickwork_metrics``."""
