"""Concurrent runs in the engine: a claimed fire of a schedule with a concurrency bound
(``overlap = "allow"``, a ``concurrency_key``) is admitted by the store before it starts, and an
``allow`` schedule is released with its next fire as the run starts, so the next fire can start
while this run goes on (docs/claim-protocol.md#concurrent-runs). The ends of such runs are
written against their run rows (:meth:`tickwork.abc.Store.end_detached`), not through the
fenced release of the claim they no longer hold.

Schedules without these options never reach this module: their fires cost nothing more.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Literal

from ..abc import Store
from ..errors import RowLockedError, StoreError
from ..structures import ADMISSION_FENCED, Admission, Claim, Finish, MisfirePolicy, Outcome, RunStatus
from .counters import Counters
from .holidayrows import recorded_until
from .listener import EngineListener
from .planning import NextAfter, grace_of, plan_next_fire, with_holidays
from .runlog import log_run_ends
from .settings import EngineSettings

log = logging.getLogger("tickwork.engine")


class Concurrency:
    """Admits concurrent fires and writes the ends of the runs that outlived their claim.

    :param listener: returns the engine's current listener (told of the detached ends written)
    """

    def __init__(
        self,
        store: Store,
        settings: EngineSettings,
        counters: Counters,
        listener: Callable[[], EngineListener],
    ) -> None:
        self.store = store
        self.settings = settings
        # Bound once: asked only at the end of a fire after a holiday (holidayrows.py).
        self._recorded_until = functools.partial(recorded_until, store)
        self.counters = counters
        self._listener = listener
        #: Ends of released runs not written yet (kept while the database is away).
        self._unsaved: list[Finish] = []

    @property
    def backlog(self) -> int:
        return len(self._unsaved)

    def namespace_limit(self, namespace: str) -> int | None:
        """The ``max_concurrent`` of ``namespace`` (``[namespaces.NAME]``), ``None``: none. Every
        fire of a namespace that has one is admitted (:meth:`admit`)."""
        limits = self.store.namespace_limits.get(namespace)
        return None if limits is None else limits.max_concurrent

    def admit(
        self, claim: Claim, next_after: NextAfter, now: datetime, namespace_limit: int | None = None
    ) -> Literal[True] | Finish | None:
        """Ask the store to admit ``claim`` (database clock ``now``; ``namespace_limit``: the
        namespace's ``max_concurrent``).

        :return: ``True``: start it (an ``allow`` schedule is released already, its run
            detached); a :class:`Finish` recording the fire ``skipped`` with the reason (a bound
            reached, or the database unreachable), written through the claim's fenced release;
            ``None``: the claim was taken over, nothing is left to do
        """
        spec = claim.spec
        # The next fire as the end of a run now would plan it: the release of an allow schedule
        # as its run starts, or the end of a fire refused.
        plan = plan_next_fire(
            next_after,
            scheduled_for=claim.scheduled_for,
            claimed_at=claim.claimed_at,
            now=now,
            policy=spec.misfire or self.settings.misfire or MisfirePolicy.SKIP,
            grace=grace_of(spec, self.settings.misfire_grace),
            max_catchup=spec.max_catchup,
        )
        plan = with_holidays(plan, next_after, claim, now, self._recorded_until)
        release = spec.overlap.runs_beside
        admission = Admission(
            claim, release=release, next_fire=plan.next_fire, skipped=plan.skipped, namespace_limit=namespace_limit
        )
        try:
            refused = self.store.admit(self.settings.node_id, admission)
        except RowLockedError as exc:
            # Not waited for (the loop would stand still): this fire is skipped, said why.
            refused = f"not admitted: {exc}"
        except StoreError as exc:
            # Not run, and said why: the claim is still held, its end is written once the
            # database answers again (the end writer keeps it meanwhile).
            refused = f"not admitted: the database did not answer ({exc})"
        if refused is None:
            return True
        if refused == ADMISSION_FENCED:
            log.warning("%s: the fire at %s was taken over before it started", spec.name, claim.scheduled_for)
            return None
        self.counters.skipped += 1
        outcome = Outcome(RunStatus.SKIPPED, error=refused)
        return Finish(claim, outcome, plan.next_fire, skipped=plan.skipped, finished_at=now)

    def add(self, finish: Finish) -> None:
        """The end of a detached run, written by the next :meth:`write`."""
        self._unsaved.append(finish)

    def write(self) -> None:
        """Write the gathered ends of detached runs.

        :raises tickwork.errors.StoreError: after keeping them, to be written next time
        """
        if not self._unsaved:
            return
        batch, self._unsaved = self._unsaved, []
        try:
            landed = self.store.end_detached(self.settings.node_id, batch)
        except StoreError:
            self._unsaved = batch + self._unsaved
            raise
        self.counters.finished += len(batch)
        self.counters.fenced_out += landed.count(False)
        results = [f for f in batch if f.outcome.status is not RunStatus.SKIPPED]
        if results:
            self._listener().runs_finished(results)
        log_run_ends(self.settings.node_id, batch, landed)

    def drop(self) -> int:
        """Forget the unwritten ends (a node declared dead: the others recorded these runs)."""
        dropped, self._unsaved = len(self._unsaved), []
        return dropped
