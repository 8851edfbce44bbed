"""``tickwork`` as a real process: the console script a user runs, how long a test waits for it,
and the lines a job appended to a file."""

from __future__ import annotations

import sys
from pathlib import Path

# Guards against a hung process; not timing assertions.
PROCESS_TIMEOUT_S = 30


def tickwork_command() -> list[str]:
    """The venv's ``tickwork`` console script, as a user would run it."""
    script = Path(sys.executable).with_name("tickwork")
    assert script.is_file(), f"no tickwork script next to {sys.executable}"
    return [str(script)]


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []
