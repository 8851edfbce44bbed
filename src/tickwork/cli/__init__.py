"""The ``tickwork`` command line (docs/cli.md)."""

from __future__ import annotations

from .main import main

__all__ = ["main"]
