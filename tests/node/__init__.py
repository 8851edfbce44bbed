"""Tests of ``tickwork.node``."""
