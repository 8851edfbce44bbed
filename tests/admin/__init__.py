"""Tests of ``tickwork.admin``."""
