"""``single`` — this node owns every schedule. Still heartbeats, so ``tickwork nodes`` shows it."""

from __future__ import annotations

from collections.abc import Sequence

from .heartbeat import HeartbeatMembership


class SingleMembership(HeartbeatMembership):
    def owned_buckets(self) -> Sequence[int] | None:
        return None


class AllMembership(HeartbeatMembership):
    """``all`` — every node attempts every schedule (FTL's rejected alternative, kept so the
    benchmarks can show its cost). Correct, because every claim strategy is."""

    def owned_buckets(self) -> Sequence[int] | None:
        return None
