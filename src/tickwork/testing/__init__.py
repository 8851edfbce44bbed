"""Test kit for tickwork users and plugin authors (docs/testing.md).

- :class:`MemoryStore` — a complete store in memory, the executable claim protocol;
- :class:`FakeClock` — a clock that moves when told to;
- :class:`SchedulerHarness` — runs declared jobs on a fake clock through the local executor;
- :class:`StoreContract` — the store contract as a pytest class to subclass (needs pytest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .clock import FakeClock
from .harness import HarnessRun, SchedulerHarness
from .memory import MemoryStore

if TYPE_CHECKING:
    from .contract import StoreContract

__all__ = ["FakeClock", "HarnessRun", "MemoryStore", "SchedulerHarness", "StoreContract"]


def __getattr__(name: str) -> Any:
    # The contract imports pytest, which an application's runtime does not need.
    if name == "StoreContract":
        from .contract import StoreContract

        return StoreContract
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
