"""What the engine counts: fires, ends, skips, fencing, parks and end batches."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Counters:
    """What the engine did, for logs, tests and benchmarks (one per engine; written by its loop
    thread only)."""

    fired: int = 0
    finished: int = 0
    skipped: int = 0
    fenced_out: int = 0
    #: runs an executor did not start: the node was declared dead while they waited (fence.py)
    not_started: int = 0
    parked: int = 0
    #: :meth:`Store.finish` calls that wrote at least one end
    end_batches: int = 0
