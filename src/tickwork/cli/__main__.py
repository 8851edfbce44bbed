"""``python -m tickwork.cli``, as before the CLI became a package (scripts and tests use it)."""

from __future__ import annotations

import sys

from .main import main

if __name__ == "__main__":
    sys.exit(main())
