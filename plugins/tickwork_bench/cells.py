"""What one benchmark run measures: the cells of store x claim x membership x nodes x workload."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

#: Claim name of the bare-driver ceiling cells (no tickwork code on the claim path).
RAW = "raw"
#: Node start with many declared jobs (bench/sync.py): no fires, no raw cell.
SYNC = "sync"
#: Two namespaces on one cluster (bench/tenants.py): a herd in one, every-second fires in the other.
TENANTS = "tenants"
WORKLOADS = ("burst", "steady", "spread", SYNC, TENANTS)
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
    :param seconds: steady and spread: how long the schedules fire; tenants: the least time the
        every-second schedules are measured (longer while the herd drains)
    :param others: tenants: the every-second schedules of namespace ``b`` (``schedules`` is the
        herd of namespace ``a``)
    :param round_no: which of the run's ``rounds`` repetitions this is (``--rounds``)
    """

    store: str
    claim: str
    membership: str
    nodes: int
    workload: str
    schedules: int
    stored: int
    seconds: float = 0.0
    round_no: int = 1
    rounds: int = 1
    others: int = 0

    @property
    def label(self) -> str:
        label = f"{self.store}/{self.claim}/{self.membership}/K={self.nodes} {self.workload}"
        return label if self.rounds == 1 else f"{label} round {self.round_no}/{self.rounds}"

    @property
    def key(self) -> tuple[str, str, str, int, str, int, int, float, int]:
        """What the cell measures, whichever round it is: the cells of one key are repetitions."""
        return (
            self.store,
            self.claim,
            self.membership,
            self.nodes,
            self.workload,
            self.schedules,
            self.stored,
            self.seconds,
            self.others,
        )

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Plan:
    """The user's selection, expanded into cells in run order."""

    cells: tuple[Cell, ...]
    #: The membership other memberships' burst cells are compared with (the first one asked
    #: for besides single), ``None`` when no node count runs more than one membership.
    baseline: str | None = None

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
    rounds: int = 1,
) -> Plan:
    """All selected cells, grouped by store and workload so similar cells run side by side,
    ``rounds`` times over. Each round runs every group (one store, workload and node count) in the
    opposite order of the round before, so that no cell always runs first or last: on a shared
    machine a cell's neighbours and its place in the run move its numbers.

    A raw ceiling cell (one per store with a raw worker and node count) precedes the burst cells it
    is compared with. Sync cells declare ``burst_schedules`` jobs and store nothing else: the
    sync's cost is what they measure.
    """
    groups: list[list[Cell]] = []
    for store in stores:
        for workload in workloads:
            due = burst_schedules if workload in ("burst", SYNC, TENANTS) else steady_schedules
            seconds = steady_seconds if workload in ("steady", "spread", TENANTS) else 0.0
            total = due if workload == SYNC else max(stored, due)
            others = steady_schedules if workload == TENANTS else 0
            for k in nodes:
                group = []
                if raw and workload == "burst" and store in RAW_STORES:
                    group.append(Cell(store, RAW, "-", k, workload, due, total))
                for claim in claims_by_store[store]:
                    for membership in memberships_for(k, memberships):
                        group.append(Cell(store, claim, membership, k, workload, due, total, seconds, others=others))
                groups.append(group)
    cells = [
        replace(cell, round_no=r, rounds=rounds)
        for r in range(1, rounds + 1)
        for group in groups
        for cell in (group if r % 2 else reversed(group))
    ]
    compared = [m for m in memberships if m != SINGLE]
    baseline = compared[0] if len(compared) > 1 and any(k > 1 for k in nodes) else None
    return Plan(tuple(cells), baseline)
