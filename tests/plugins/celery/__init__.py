"""Tests of ``plugins/tickwork_celery``."""
