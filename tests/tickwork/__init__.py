"""Tests of the root package's own modules (``tickwork/structures.py``, ``errors.py``)."""
