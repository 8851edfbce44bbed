"""Database files readable by their owner only.

A SQLite file holds every schedule's target and arguments (and a queue file every job's): whoever
can write it chooses the code nodes run, and whoever can read it sees the arguments. SQLite creates
a missing file with ``0644 & ~umask``; creating it ourselves first with ``0600`` keeps it private,
and SQLite gives its ``-wal`` and ``-shm`` files the mode of the database file.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

#: Owner read and write, nothing for group and others.
PRIVATE = 0o600


def create_private(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists; an existing file keeps its mode.

    Its directory must exist. Two processes racing to create it are fine: one wins, the other
    finds it there.
    """
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE))
