"""What one benchmark run measures: the cells of store x claim x membership x nodes x workload."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

#: Claim name of the bare-driver ceiling cells (no tickwork code on the claim path).
RAW = "raw"
#: Node start with many declared jobs (bench/sync.py): no fires, no raw cell.
SYNC = "sync"
WORKLOADS = ("burst", "steady", "spread", SYNC)
STORES = ("sqlite", "postgres", "mysql")
#: Stores with a bare-driver ceiling worker (bench/raw.py); the others get no raw cell.
RAW_STORES = ("sqlite", "postgres")
#: The membership used whenever a cell has a single node.
SINGLE = "single"


@dataclass(frozen=True)
class Cell:
    """One measured combination.

    :param schedules: schedules made due (burst: all at one instant; steady: each every second);
        sync: jobs the module declares
    :param stored: schedules in the table; the ``stored - schedules`` others are not due (sync:
        equal to ``schedules``)
    :param seconds: steady and spread: how long the schedules fire
    """

    store: str
    claim: str
    membership: str
    nodes: int
    workload: str
    schedules: int
    stored: int
    seconds: float = 0.0

    @property
    def label(self) -> str:
        return f"{self.store}/{self.claim}/{self.membership}/K={self.nodes} {self.workload}"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Plan:
    """The user's selection, expanded into cells in run order."""

    cells: tuple[Cell, ...]

    def __len__(self) -> int:
        return len(self.cells)


def memberships_for(nodes: int, memberships: Sequence[str]) -> list[str]:
    """``single`` is the membership of one node; several nodes use the others that were asked for."""
    if nodes == 1:
        return [SINGLE]
    return [m for m in memberships if m != SINGLE]


def expand(
    *,
    stores: Sequence[str],
    claims_by_store: dict[str, list[str]],
    memberships: Sequence[str],
    nodes: Sequence[int],
    workloads: Sequence[str],
    burst_schedules: int,
    stored: int,
    steady_schedules: int,
    steady_seconds: float,
    raw: bool,
) -> Plan:
    """All selected cells, grouped by store and workload so similar cells run side by side.

    A raw ceiling cell (one per store with a raw worker and node count) precedes the burst cells it
    is compared with. Sync cells declare ``burst_schedules`` jobs and store nothing else: the
    sync's cost is what they measure.
    """
    cells: list[Cell] = []
    for store in stores:
        for workload in workloads:
            due = burst_schedules if workload in ("burst", SYNC) else steady_schedules
            seconds = steady_seconds if workload in ("steady", "spread") else 0.0
            total = due if workload == SYNC else max(stored, due)
            for k in nodes:
                if raw and workload == "burst" and store in RAW_STORES:
                    cells.append(Cell(store, RAW, "-", k, workload, due, total))
                for claim in claims_by_store[store]:
                    for membership in memberships_for(k, memberships):
                        cells.append(Cell(store, claim, membership, k, workload, due, total, seconds))
    return Plan(tuple(cells))
