"""The start-up banner: what a node runs with, so that the first lines of its log answer
"which config, which database, which jobs, when do they fire"."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..errors import TickworkError
from ..scheduling.localtime import local_time
from ..scheduling.sync import SyncReport

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger("tickwork.node")

#: Jobs listed one per line; the rest are counted.
BANNER_JOBS = 20


def _when(value: datetime | None, timezone: str) -> str:
    return "never (disabled or no further fire)" if value is None else local_time(value.astimezone(UTC), timezone)


def log_banner(node: Node, reports: list[SyncReport]) -> None:
    """Log the config file, the store (no password), the membership and the declared jobs with
    their next fire times (the first :data:`BANNER_JOBS`, then a count). What the sync changed
    was logged by the sync itself. A listed job module that declares nothing is a warning: its
    jobs are not running, and nothing else would say so."""
    for report in reports:
        if not (report.created or report.updated or report.unchanged):
            log.warning(
                "job module %s (scheduler.jobs) declares no jobs: no @tickwork.cron, calendar, every or "
                "schedule decorator ran when it was imported (are the jobs in a module it does not import?)",
                report.module,
            )
    if not log.isEnabledFor(logging.INFO):
        return
    config = node.config
    store = node.store.describe()
    log.info(
        "node %s starting: config %s; store %s (%s); membership %s; executors %s",
        node.node_id,
        config.source.resolve() if config.source else "none (defaults)",
        store,
        config.store.plugin,
        config.membership.plugin,
        ", ".join(sorted(node.executors)),
    )
    names = [name for r in reports for name in (*r.created, *r.updated, *r.unchanged)]
    for name in names[:BANNER_JOBS]:
        try:
            schedule = node.store.get(name, namespace=config.scheduler.namespace)
        except TickworkError:
            continue  # removed meanwhile by another node's sync
        state = "" if schedule.spec.enabled else " (disabled)"
        log.info(
            "  job %s: %s %r %s, next fire %s%s",
            name,
            schedule.spec.trigger_kind,
            schedule.spec.expression,
            schedule.spec.timezone,
            _when(schedule.next_fire, schedule.spec.timezone),
            state,
        )
    if len(names) > BANNER_JOBS:
        log.info("  ... and %d more declared job(s) (tickwork jobs list shows them all)", len(names) - BANNER_JOBS)
