"""Tests of ``tickwork.config``."""
