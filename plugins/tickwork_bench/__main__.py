"""``python -m tickwork_bench``: the same as ``tickwork bench``."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
