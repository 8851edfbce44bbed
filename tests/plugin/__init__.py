"""Tests of ``tickwork.plugin``."""
