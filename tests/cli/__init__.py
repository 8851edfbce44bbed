"""Tests of ``tickwork.cli``."""
