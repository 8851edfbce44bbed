"""Registers this package's implementations with tickwork (filled in by its owner)."""

from __future__ import annotations
