"""Tests of ``plugins/tickwork_dramatiq``."""
