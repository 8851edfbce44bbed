"""Tests of ``plugins/tickwork_celerybeat``."""
