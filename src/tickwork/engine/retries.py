"""Failed runs waiting for a retry, each still holding its claim."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..abc import Store
from ..errors import RowLockedError
from ..structures import Claim

log = logging.getLogger("tickwork.engine")

#: Seconds before a retry whose schedule row was locked by another transaction is asked again.
LOCKED_RETRY = 0.25


@dataclass
class PendingRetry:
    """Attempt ``claim.attempt`` of a fire, due at the monotonic time ``due``."""

    due: float
    claim: Claim
    mono_claimed: float
    #: Whether its start was passed over as locked by another transaction (warned once).
    locked: bool = False


class RetryQueue:
    """Pending retries. A retry leaves the queue only once its attempt is recorded as started
    (:meth:`Store.start_attempt`): a store error leaves it pending, so the next pass tries again
    and the claim is never stranded."""

    def __init__(self, store: Store, node_id: str, monotonic: Callable[[], float]) -> None:
        self.store = store
        self.node_id = node_id
        self.monotonic = monotonic
        self._pending: list[PendingRetry] = []

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, failed: Claim, delay: float, mono_claimed: float) -> None:
        retry = replace(failed, attempt=failed.attempt + 1, run_id=None)
        self._pending.append(PendingRetry(self.monotonic() + delay, retry, mono_claimed))
        log.info("%s: attempt %d failed; retry %d in %.1fs", failed.spec.name, failed.attempt, retry.attempt, delay)

    def claims(self) -> list[Claim]:
        return [r.claim for r in self._pending]

    def seconds_until_next(self) -> float | None:
        if not self._pending:
            return None
        return max(0.0, min(r.due for r in self._pending) - self.monotonic())

    def start_due(self, start: Callable[[PendingRetry, int | None], None]) -> None:
        """Open the run row of every due retry and pass it to ``start`` with its run id (``None``:
        the claim was taken over). Raises the store's error after keeping what is left."""
        now = self.monotonic()
        for retry in [r for r in self._pending if r.due <= now]:
            try:
                run_id = self.store.start_attempt(self.node_id, retry.claim)
            except RowLockedError as exc:
                # Passed over, not waited for: the loop goes on, this retry is asked again soon.
                if not retry.locked:
                    log.warning("retry %d of %s", retry.claim.attempt, exc)
                retry.locked = True
                retry.due = now + LOCKED_RETRY
                continue
            self._pending.remove(retry)
            start(retry, run_id)

    def take_all(self) -> list[PendingRetry]:
        pending, self._pending = self._pending, []
        return pending
