"""Tests of ``tickwork.scheduling``."""
