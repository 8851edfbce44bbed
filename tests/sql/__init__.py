"""Tests of ``tickwork.sql``."""
