"""``python -m tickwork.cli``: the same command line as ``tickwork`` (and ``python -m tickwork``)."""

from __future__ import annotations

from . import main

raise SystemExit(main())
