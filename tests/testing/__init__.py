"""Tests of ``tickwork.testing``."""
