"""The engine of one node, in small parts (see docs/architecture.md#the-engine).

``Engine`` and ``EngineSettings`` are the public names; the parts are importable from their
modules for tests and embedding.
"""

from __future__ import annotations

from .faults import format_exception
from .loop import Engine
from .runs import InFlight
from .settings import MAX_SKIPPED_RECORDS, EngineSettings

__all__ = ["MAX_SKIPPED_RECORDS", "Engine", "EngineSettings", "InFlight", "format_exception"]
