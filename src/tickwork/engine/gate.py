"""When to claim: the next due time this node may claim, the claim lead and busy polling."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from datetime import datetime

from ..abc import Membership, Store
from .clock import DatabaseClock
from .settings import BUSY_POLL_WINDOW, NEXT_DUE_MAX_AGE

log = logging.getLogger("tickwork.engine")

#: Seconds between claims while the earliest due fire is one every claim passes over (its row
#: locked by another transaction): claiming every pass for it would spin.
PASSED_OVER_RETRY = 0.25
#: Seconds a due fire may be passed over by this node's claims before it says so at WARNING.
PASSED_OVER_WARN = 1.0


class NextDueNote:
    """The next due time a drained claim read for this node (:meth:`Store.claim_due
    <tickwork.abc.Store.claim_due>`'s ``next_due``), and how many changes the gate had been told
    of when that claim began (a change told since makes it stale, as for a read of its own)."""

    __slots__ = ("changes", "due", "read")

    def __init__(self, changes: int) -> None:
        self.changes = changes
        self.due: datetime | None = None
        self.read = False

    def __call__(self, due: datetime | None) -> None:
        self.due, self.read = due, True


class ClaimGate:
    """Decides whether to claim now and how long to sleep until the next claim.

    When claiming ahead, it claims only once the earliest claimable fire is due within this
    node's claim lead (about half the lookahead): a wake-up (a run ended here or elsewhere) then
    does not claim one freshly released schedule at a time, which at 1,000 fires/s spread over
    each second cost a claim statement, a commit and an empty claim on the other nodes per fire
    or two; nor does the node that ran the last fires take the next ones as it releases them,
    before any other node could.
    """

    def __init__(
        self,
        store: Store,
        membership: Membership,
        clock: DatabaseClock,
        lookahead: float,
        steal_after: float | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> None:
        self.store = store
        #: The namespaces this node serves (``[scheduler] namespaces``; ``None``: every one).
        self.namespaces = namespaces
        self.membership = membership
        self.clock = clock
        self.lookahead = lookahead
        self.steal_after = steal_after
        self._next_due: datetime | None = None
        # The due time a claim came back empty for (None once a claim took something). Read
        # again unchanged, it is not a fire this node can claim ahead: another bucket's fire,
        # claimable only once overdue by steal_after. The next claim for it waits for the time
        # itself, not a claim lead before it (claiming every pass until then would spin).
        self._empty_at: datetime | None = None
        self._known = False
        self._read_at = 0.0
        #: How many times the next due time was read from the store, on its own or (of those)
        #: by the claim that drained what was due.
        self.reads = 0
        self.reads_in_claims = 0
        # Bumped by changed(): a next due time read before the latest change is not trusted.
        self._changes = 0
        self._read_changes = -1
        self.claim_lead = self.draw_claim_lead()
        # A node that has just started looks as if something were due: the fires it may claim
        # may all be held by nodes that started before it.
        self._due_seen_at = clock.monotonic()
        # A due fire the last drained claims did not take (its row locked elsewhere), and since when.
        self._passed_over: datetime | None = None
        self._passed_over_since = 0.0
        self._passed_over_warned = False

    @property
    def next_due(self) -> datetime | None:
        """The earliest fire this node may claim, as last read or folded in."""
        return self._next_due

    def changed(self) -> None:
        """Something changed in the store: the next due time must be read again."""
        self._changes += 1

    def draw_claim_lead(self) -> float:
        """How long before a fire's time this node's next claim ahead begins: half the lookahead
        less up to 2 % of it, drawn anew after each drained claim. All owners of a fire wake at
        about the same time, so a large batch is claimed by all of them at once; without the
        jitter, the owner whose clock reading happens to be tightest would win every small batch
        (in a 3-node test one node ran 1,079 fires and another 0)."""
        return self.lookahead * random.uniform(0.48, 0.5)

    def is_open(self) -> bool:
        """Whether to claim now. The next due time is the one read before the loop last slept;
        after a claim drained the window it is read again first. A change that brings a fire
        closer wakes the loop, which reads it again before it sleeps, so the gate delays such a
        fire by one loop at most."""
        if self.lookahead <= 0:
            return True
        if not self._known:
            self.read()
        if self._next_due is None:
            return False
        return (self._next_due - self.clock.now()).total_seconds() <= self._lead_for(self._next_due)

    def _lead_for(self, due: datetime) -> float:
        return 0.0 if due == self._empty_at else self.claim_lead

    def note(self) -> NextDueNote:
        """What a claim about to be sent tells the next due time it reads to (where the store
        reads it in the claim: :attr:`Store.claim_reads_next_due
        <tickwork.abc.Store.claim_reads_next_due>`)."""
        return NextDueNote(self._changes)

    def claimed(self, count: int, limit: int, note: NextDueNote | None = None) -> None:
        self._empty_at = None if count else self._next_due
        if count:
            self._due_seen_at = self.clock.monotonic()
        if count < limit:
            self._note_passed_over()
            # The window is drained: claim again only after reading what is due next (what was
            # read before is claimed now), at a new lead. The claim may have read it already.
            if note is not None and note.read:
                self._keep_reading(note.due, note.changes)
                self.reads_in_claims += 1
            else:
                self._known = False
            self.claim_lead = self.draw_claim_lead()

    def _note_passed_over(self) -> None:
        """A drained claim left the fire read as due (by the database clock) untaken: another
        node took it meanwhile (the next read moves on), or its row is locked by another transaction
        (the next read finds it again: claims around it are spaced, and it is logged once that has
        lasted :data:`PASSED_OVER_WARN`, longer than tickwork's own transactions hold a row)."""
        due = self._next_due
        if due is None or due > self.clock.now():
            self._passed_over = None
            return
        now_mono = self.clock.monotonic()
        if due != self._passed_over:
            self._passed_over, self._passed_over_since, self._passed_over_warned = due, now_mono, False
        elif not self._passed_over_warned and now_mono - self._passed_over_since >= PASSED_OVER_WARN:
            self._passed_over_warned = True
            log.warning(
                "a fire due at %s is still not claimable %.1fs later by this node, which may claim it: its schedule "
                "row is locked by a long transaction (a stray SELECT ... FOR UPDATE or a long transaction of another "
                "database session, or a long one of another tickwork node); claiming around it every %.2fs until "
                "it is released",
                due.isoformat(),
                now_mono - self._passed_over_since,
                PASSED_OVER_RETRY,
            )

    def read(self) -> datetime | None:
        changes = self._changes
        due = self.store.next_due(
            buckets=self.membership.owned_buckets(), steal_after=self.steal_after, namespaces=self.namespaces
        )
        self._keep_reading(due, changes)
        return due

    def _keep_reading(self, due: datetime | None, changes: int) -> None:
        """A next due time read from the store (on its own or by a claim), with the changes told
        of when the read began."""
        self._next_due, self._known = due, True
        self._read_at, self._read_changes = self.clock.monotonic(), changes
        self.reads += 1

    def fresh(self) -> bool:
        """Whether the next due time last read can be used without reading it again: nothing was
        notified since, it is younger than :data:`NEXT_DUE_MAX_AGE`, and this node's own ends have
        been folded in (:meth:`fold_released`). Runs that end one at a time otherwise cost a read
        each (measured: 0.76-0.93 reads per fire on SQLite at 1,000 fires/s)."""
        return (
            self._known
            and self._read_changes == self._changes
            and self.clock.monotonic() - self._read_at < NEXT_DUE_MAX_AGE
        )

    def nothing_due_within(self, seconds: float) -> bool:
        """Whether, by the next due time last read and the database clock as last read, no fire
        this node may claim is due within ``seconds``. Never asks the store: before a reading
        (or after a claim, until the next one) the answer is ``False`` (something may be due).
        A change notified since the reading does not count: in a cluster at work the others'
        claims and ends notify all the time, and a wrong answer here costs one statement (an
        end written without company), never a fire."""
        if not self._known:
            return False
        if self._next_due is None:
            return True
        now = self.clock.estimate()
        return now is not None and (self._next_due - now).total_seconds() > seconds

    def fold_released(self, next_fires: list[datetime]) -> None:
        """Schedules this node released are due at their next fire (or at a "run now" that arrived
        meanwhile, which the next read, at most NEXT_DUE_MAX_AGE later, finds)."""
        if self._known and next_fires:
            earliest = min(next_fires)
            if self._next_due is None or earliest < self._next_due:
                self._next_due = earliest

    def seconds_until_claim(self, sleep: float) -> float:
        """``sleep`` shortened to when the next claim is due."""
        due = self._next_due if self.fresh() else self.read()
        now_mono = self.clock.monotonic()
        if due is not None:
            # The database clock decides; ask it rather than trusting this node's wall clock.
            until_due = (due - self.clock.now()).total_seconds() - self._lead_for(due)
            self._due_seen_at = now_mono
            floor = PASSED_OVER_RETRY if due == self._passed_over else 0.001
            return min(sleep, max(until_due, floor))
        if self.lookahead > 0 and now_mono - self._due_seen_at < BUSY_POLL_WINDOW:
            # Everything this node may claim is running, held by whichever node claimed it ahead;
            # ends are not notified, so look again in time to take a turn at the next claim. (A
            # cluster with nothing to do stops looking after BUSY_POLL_WINDOW.)
            return min(sleep, self.lookahead / 4)
        return sleep
