"""``Admin.backfill``: run a schedule's fire times of a past (or any) range once each, as normal
runs with their own fire identities, on whichever node owns the schedule (docs/cluster.md#backfill)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..abc import Store
from ..errors import ConfigError, TickworkError
from ..plugin.manager import PluginManager
from ..scheduling.firetimes import fire_times
from ..structures import BACKFILL_OVERLAP, FAILING, RunStatus, iso_z, utc

#: Most fire times one backfill queues (a mistyped range should not queue a million runs).
MAX_BACKFILL = 10_000


@dataclass(frozen=True)
class BackfillReport:
    """What a backfill found and did.

    :param times: every fire time of the schedule in the range, earliest first
    :param queued: those queued to run (with ``dry_run``: those that would be)
    :param already: those left out because the history holds a run of them (without ``rerun``)
    :param overlap: how the queued fires run beside one another (``buffer_all`` or ``allow``)
    :param capped_to: the database clock's time the range's end was capped to (a range reaching
        past now: the fire times after it run at their time, never early), or ``None``
    """

    name: str
    times: list[datetime]
    queued: list[datetime]
    already: list[datetime]
    dry_run: bool
    overlap: str = "buffer_all"
    capped_to: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dry_run": self.dry_run,
            "overlap": self.overlap,
            "capped_to": None if self.capped_to is None else iso_z(self.capped_to),
            "times": [iso_z(t) for t in self.times],
            "queued": [iso_z(t) for t in self.queued],
            "already": [iso_z(t) for t in self.already],
        }


class Backfills:
    """The backfill part of :class:`tickwork.Admin`."""

    manager: PluginManager

    if TYPE_CHECKING:

        def store(self, *, write: bool = False) -> Store: ...

        def named_in(self) -> str: ...

        def read_in(self) -> str | None: ...

    def backfill(
        self,
        name: str,
        start: datetime,
        end: datetime,
        *,
        dry_run: bool = False,
        rerun: bool = False,
        overlap: str = "buffer_all",
    ) -> BackfillReport:
        """Run every fire time of schedule ``name`` from ``start`` (inclusive) to ``end``
        (exclusive) once: each is queued, and a node owning the schedule runs it through the
        schedule's executor as a normal run of that fire (``scheduled_for`` is the fire time; the
        history holds it like any other run). A fire the history holds a run of is left out,
        unless ``rerun`` (then it runs as a further attempt); a fire only *skipped* is run. The
        fire times are the schedule's own (its jitter, bounds, further expressions and
        exclusions apply), whether it is enabled or not.

        :param overlap: how the fires run beside one another: ``buffer_all`` (the default) one at
            a time in fire-time order, each once no run of the schedule is running (its own fires
            included); ``allow`` side by side, up to the schedule's ``max_concurrent`` running
            runs (unbounded when unset; a node runs at most a few backfilled fires at once)
        :param dry_run: compute and report, queue nothing

        Never early: only fire times that have passed by the database clock are backfilled. A
        range reaching past now is capped to now (``BackfillReport.capped_to`` says so); the
        fires after it run at their own time. The store refuses a time past its clock too.

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        :raises tickwork.ConfigError: for an empty or reversed range, a range that starts at or
            after now (database clock), more than :data:`MAX_BACKFILL` fire times, or an unknown
            ``overlap``
        """
        if overlap not in BACKFILL_OVERLAP:
            raise ConfigError(f"backfill: --overlap must be one of {', '.join(BACKFILL_OVERLAP)}, not {overlap!r}")
        start, end = utc(start), utc(end)
        if end <= start:
            raise ConfigError(f"backfill: --to {iso_z(end)} must be after --from {iso_z(start)}")
        store = self.store(write=not dry_run)
        spec = store.get(name, namespace=self.named_in()).spec
        now = store.now()
        if start >= now:
            raise ConfigError(
                f"backfill: --from {iso_z(start)} is not in the past (database clock: {iso_z(now)}); a backfill "
                "runs fire times that have passed, and fires to come run at their time"
            )
        capped_to = None
        if end > now:
            # The end is exclusive: a fire due exactly now is the schedule's own, not a backfill's.
            end = capped_to = now
        fires = fire_times(spec, self.manager)
        times: list[datetime] = []
        current = fires.next_after(start - timedelta(microseconds=1))
        while current is not None and current < end:
            if len(times) == MAX_BACKFILL:
                raise ConfigError(
                    f"backfill: {name} fires more than {MAX_BACKFILL:,} times from {iso_z(start)} to {iso_z(end)}; "
                    "backfill a shorter range at a time"
                )
            times.append(utc(current))
            current = fires.next_after(current)
        if dry_run:
            ran = set() if rerun else self._ran(store, name, self.named_in(), start, end, len(times))
            queued = [t for t in times if t not in ran]
        else:
            queued = (
                store.queue_backfill(name, times, rerun=rerun, overlap=overlap, namespace=self.named_in())
                if times
                else []
            )
        chosen = set(queued)
        return BackfillReport(name, times, queued, [t for t in times if t not in chosen], dry_run, overlap, capped_to)

    def rerun(self, name: str, run_id: int) -> BackfillReport:
        """Run one failed (or timed-out) fire of schedule ``name`` again, as its next attempt:
        the fire of run ``run_id``, queued as a one-fire backfill with ``rerun`` (a node owning
        the schedule runs it; the history holds it as a further attempt of the same fire time).

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        :raises tickwork.TickworkError: if the history holds no run ``run_id`` of ``name``, or the
            latest attempt of its fire did not fail (it succeeded, is running, or was rerun already)
        """
        store = self.store(write=True)
        store.get(name, namespace=self.named_in())
        run = store.get_run(run_id)
        if run is None or run.schedule != name or run.namespace != self.named_in():
            raise TickworkError(f"no run {run_id} of schedule {name!r} in the history")
        moment = utc(run.scheduled_for)
        attempts = store.find_runs(
            schedule=name,
            since=moment,
            until=moment + timedelta(microseconds=1),
            limit=1,
            namespace=self.named_in(),
        )
        latest = attempts[0] if attempts else run
        if latest.status not in FAILING:
            raise TickworkError(
                f"the fire of {name} scheduled for {iso_z(moment)} is not failed: its latest attempt "
                f"({latest.attempt}) is {latest.status.value}; only a failed or timed-out fire is run again"
            )
        queued = store.queue_backfill(name, [moment], rerun=True, overlap="buffer_all", namespace=self.named_in())
        return BackfillReport(name, [moment], queued, [t for t in [moment] if t not in set(queued)], False)

    @staticmethod
    def _ran(store: Store, name: str, namespace: str, start: datetime, end: datetime, count: int) -> set[datetime]:
        # A fire's attempts each have a row; a dry run reads enough for a few attempts per fire.
        ran = [s for s in RunStatus if s is not RunStatus.SKIPPED]
        runs = store.find_runs(
            schedule=name, status=ran, since=start, until=end, limit=max(1, count * 8), namespace=namespace
        )
        return {r.scheduled_for for r in runs}
