"""Where the repository is, for tests that run commands in it or read its docs: one definition,
whatever folder a test sits in."""

from __future__ import annotations

from pathlib import Path

#: The checkout's root (the folder holding ``pyproject.toml``, ``src/``, ``plugins/`` and ``tests/``).
REPO = Path(__file__).resolve().parents[2]
