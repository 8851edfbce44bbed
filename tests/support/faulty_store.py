"""A real SQLite store that fails on purpose: a store error before a call (nothing happened) or
after it (the call committed and its answer was lost), at call sites the test chooses or at
seeded random ones. Used by the fault-injection tests of the engine."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from tickwork.abc.storeroles import PRUNE_BATCH, NextDueSink
from tickwork.errors import StoreError
from tickwork.structures import Claim, Fault, Finish, Outcome
from tickwork_sqlite.store import SQLiteStore

#: The store calls the engine makes; each may be made to fail.
ENGINE_CALLS = (
    "claim_due",
    "finish",
    "park",
    "end_attempt",
    "start_attempt",
    "unclaim",
    "renew",
    "next_due",
    "reap_expired",
    "release_untracked",
    "prune_history",
)


class FaultyStore(SQLiteStore):
    """:param rng: with ``rate``, fail that share of calls at random (half of them after the call)
    :param fail_next: call names to fail once each, before the call (tests add to it)"""

    def __init__(self, path: str, *, clock: Callable[[], datetime], rng: random.Random | None = None) -> None:
        super().__init__(path, clock=clock)
        self.rng = rng or random.Random(0)
        self.rate = 0.0
        #: With ``rate``: fail ``"before"`` calls, ``"after"`` them (lost answers) or ``"both"``.
        self.mode = "both"
        self.fail_next: list[str] = []
        self.lost_next: list[str] = []
        self.injected = 0
        self.lost = 0

    def _call(self, name: str, call: Callable[[], Any]) -> Any:
        before = name in self.fail_next
        after = name in self.lost_next
        if before:
            self.fail_next.remove(name)
        elif after:
            self.lost_next.remove(name)
        elif self.rate and self.rng.random() < self.rate:
            lost = self.mode == "after" or (self.mode == "both" and self.rng.random() < 0.5)
            before, after = not lost, lost
        if before:
            self.injected += 1
            raise StoreError(f"injected failure before {name}")
        result = call()
        if after:
            self.lost += 1
            raise StoreError(f"injected failure after {name} (committed, answer lost)")
        return result

    def claim_due(
        self,
        node_id: str,
        *,
        limit: int,
        buckets: Sequence[int] | None,
        ahead: float = 0.0,
        steal_after: float | None = None,
        namespaces: Sequence[str] | None = None,
        next_due: NextDueSink | None = None,
    ) -> list[Claim]:
        return self._call(  # type: ignore[no-any-return]
            "claim_due",
            lambda: super(FaultyStore, self).claim_due(
                node_id,
                limit=limit,
                buckets=buckets,
                ahead=ahead,
                steal_after=steal_after,
                namespaces=namespaces,
                next_due=next_due,
            ),
        )

    def finish(self, node_id: str, finishes: Sequence[Finish]) -> list[bool]:
        return self._call("finish", lambda: super(FaultyStore, self).finish(node_id, finishes))  # type: ignore[no-any-return]

    def park(self, node_id: str, parks: Sequence[tuple[Finish, Fault]]) -> list[bool | None]:
        return self._call("park", lambda: super(FaultyStore, self).park(node_id, parks))  # type: ignore[no-any-return]

    def end_attempt(self, claim: Claim, outcome: Outcome, started_at: datetime | None = None) -> None:
        self._call("end_attempt", lambda: super(FaultyStore, self).end_attempt(claim, outcome, started_at))

    def start_attempt(self, node_id: str, claim: Claim) -> int | None:
        return self._call("start_attempt", lambda: super(FaultyStore, self).start_attempt(node_id, claim))  # type: ignore[no-any-return]

    def unclaim(self, node_id: str, claims: Sequence[Claim]) -> int:
        return self._call("unclaim", lambda: super(FaultyStore, self).unclaim(node_id, claims))  # type: ignore[no-any-return]

    def renew(self, node_id: str, claims: Sequence[Claim]) -> None:
        self._call("renew", lambda: super(FaultyStore, self).renew(node_id, claims))

    def next_due(
        self,
        *,
        buckets: Sequence[int] | None,
        steal_after: float | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> datetime | None:
        return self._call(  # type: ignore[no-any-return]
            "next_due",
            lambda: super(FaultyStore, self).next_due(buckets=buckets, steal_after=steal_after, namespaces=namespaces),
        )

    def reap_expired(self, grace_seconds: float) -> int:
        return self._call("reap_expired", lambda: super(FaultyStore, self).reap_expired(grace_seconds))  # type: ignore[no-any-return]

    def release_untracked(self, node_id: str, tracked: Sequence[Claim], reason: str) -> int:
        return self._call(  # type: ignore[no-any-return]
            "release_untracked", lambda: super(FaultyStore, self).release_untracked(node_id, tracked, reason)
        )

    def prune_history(self, older_than: timedelta, *, limit: int = PRUNE_BATCH) -> int:
        return self._call(  # type: ignore[no-any-return]
            "prune_history", lambda: super(FaultyStore, self).prune_history(older_than, limit=limit)
        )
