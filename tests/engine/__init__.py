"""Tests of ``tickwork.engine``."""
