"""Bucket ownership in the due query: a mask of the owned buckets bound as one value, and the
filters built on it, remembered per bucket set (a ring changes rarely, a claim asks every pass)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Float, LargeBinary, bindparam, func, literal, or_

from ..structures import BUCKETS
from .schema import schedules

#: The byte of an owned bucket in :func:`owned_mask`, and of one not owned (the ownership test is
#: "greater than NOT_OWNED"; see :meth:`BucketFilters.owned`).
OWNED = b"\x01"
NOT_OWNED = b"\x00"


class Ownership(NamedTuple):
    """A bucket set's mask and the ownership filters built on it."""

    mask: bytes
    owned: ColumnElement[bool]
    #: ``owned`` or overdue, per ``steal_after`` (filled as claims ask for it).
    or_overdue: dict[float, ColumnElement[bool]]


def owned_mask(buckets: Sequence[int]) -> bytes:
    """One byte per bucket, :data:`OWNED` where the node owns it (byte ``b`` for bucket ``b``)."""
    mask = bytearray(NOT_OWNED * max(BUCKETS, max(buckets, default=-1) + 1))
    for bucket in buckets:
        mask[bucket] = OWNED[0]
    return bytes(mask)


class BucketFilters:
    """The ownership filters of one store.

    :param now: the store's clock expression
    :param plus_seconds: the database's ``value + seconds``
    """

    def __init__(
        self,
        now: Callable[[], ColumnElement[Any]],
        plus_seconds: Callable[[ColumnElement[Any], ColumnElement[Any]], ColumnElement[Any]],
    ) -> None:
        self._now = now
        self._plus_seconds = plus_seconds
        self._ownership: dict[tuple[int, ...], Ownership] = {}

    def owned(self, buckets: Sequence[int] | None, steal_after: float | None = None) -> ColumnElement[bool] | None:
        """The ownership filter of the due query: the row's byte in a mask of the owned buckets
        (parameter ``owned_buckets``), or with ``steal_after`` also any fire overdue by that many
        seconds by the database clock (parameter ``steal_after``; see
        :meth:`tickwork.abc.Store.claim_due`).

        One bound value whatever the ring looks like, and a constant-time test per row: an
        ``IN`` list (or ``= ANY(array)``) of the ~500 buckets a node owns is scanned for every
        candidate row, which made ``hashring`` slower than ``all``. ``substr`` of a binary
        string is the same function on SQLite, PostgreSQL and MySQL."""
        if buckets is None:
            return None
        ownership = self.of(buckets)
        if steal_after is None:
            return ownership.owned
        found = ownership.or_overdue.get(steal_after)
        if found is None:
            # An OR of the two tests: the claim still reads the due index in fire-time order and
            # tests each row (tests/plugins/postgres/test_claim_plans.py). The value is bound in the expression
            # for strategies that execute it as built.
            since = self._plus_seconds(self._now(), -bindparam("steal_after", steal_after, type_=Float))
            found = ownership.or_overdue[steal_after] = or_(ownership.owned, schedules.c.next_fire <= since)
        return found

    def of(self, buckets: Sequence[int]) -> Ownership:
        # Built once per ring: building the filter expression cost more than the bucket test.
        key = tuple(buckets)
        found = self._ownership.get(key)
        if found is None:
            if len(self._ownership) > 64:
                self._ownership.clear()
            mask = owned_mask(key)
            param = bindparam("owned_buckets", mask, type_=LargeBinary)
            # "> x'00'", not "= x'01'": the mask holds only those two bytes, but PostgreSQL
            # estimates an equality on an expression at 0.5 % of the rows and then scans and
            # sorts every due row for a claim of 100 instead of reading the due index in order
            # (5 ms against 0.1 ms with 10,000 due; docs/benchmarks.md). An inequality is
            # estimated at a third. A bucket past the mask's end gives an empty string: not owned.
            owned = func.substr(param, schedules.c.bucket + 1, 1) > literal(NOT_OWNED, LargeBinary)
            found = self._ownership[key] = Ownership(mask, owned, {})
        return found
