"""Job modules and targets importable from the working directory."""

from __future__ import annotations

import os
import sys


def import_from_working_directory() -> None:
    """Like gunicorn/celery: put the working directory on ``sys.path``, which the ``tickwork``
    console script (unlike ``python -m``) does not do, so that ``myjobs`` in ``.`` is found."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
