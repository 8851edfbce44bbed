"""The stuck hand-off check (``Store.mark_stuck_handoffs``, run by every node with a hand-off
executor every few seconds) beside many schedules of that executor: its median time and the
statements it sends, on a scratch store of ``--schedules`` schedules handed to ``celery`` with a
few hand-offs still open (none stuck, so every call reads and marks nothing).

    python benchmarks/stuck_handoffs.py --schedules 100000
    python benchmarks/stuck_handoffs.py --schedules 100000 --store postgres --pg-url postgresql://...
    # before/after in one run: a copy of another tree first on the path
    PYTHONPATH=/tmp/base/src:/tmp/base/plugins python benchmarks/stuck_handoffs.py --schedules 100000
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

from sqlalchemy import event, insert, select

from scratchstores import CHUNK, T0, add_store_arguments, median_ms, scratch_store
from tickwork.sql.schema import runs, schedules
from tickwork.sql.store import SQLStore, spec_values
from tickwork.structures import ScheduleSpec

OPEN = 20


def fill(store: SQLStore, count: int) -> None:
    now = store.now()
    rows = [
        spec_values(ScheduleSpec(f"h-{i:07d}", "cron", "0 3 * * *", "m:f", executor="celery"))
        | {"next_fire": T0, "created_at": now, "updated_at": now}
        for i in range(count)
    ]
    with store.engine.begin() as conn:
        for start in range(0, count, CHUNK):
            conn.execute(insert(schedules), rows[start : start + CHUNK])
        ids = list(conn.scalars(select(schedules.c.id).order_by(schedules.c.id).limit(OPEN)))
        # Open, handed off just now: read by the check, not yet past its pickup timeout.
        conn.execute(
            insert(runs),
            [
                {"schedule_id": sid, "scheduled_for": now, "status": "submitted", "started_at": now, "finished_at": now}
                for sid in ids
            ],
        )
    store.refresh_statistics()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_store_arguments(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, scratch_store(parser, args, scratch) as (store, _config):
        fill(store, args.schedules)
        sent: list[str] = []

        def count(_c: Any, _cur: Any, statement: str, _p: Any, _ctx: Any, _many: bool) -> None:
            sent.append(statement)

        def check() -> None:
            assert store.mark_stuck_handoffs("celery", 3600, "not picked up") == []

        ms = median_ms(check, args.repeat)
        event.listen(store.engine, "before_cursor_execute", count)
        check()
        event.remove(store.engine, "before_cursor_execute", count)
        load = os.getloadavg()[0]
        print(
            f"{args.store}: {args.schedules} schedules of the executor, {OPEN} open hand-offs: "
            f"median {ms:.1f} ms, {len(sent)} statements per check, load {load:.1f}"
        )


if __name__ == "__main__":
    main()
