"""Jobs of the embedding examples."""

from __future__ import annotations

import logging

import tickwork

log = logging.getLogger(__name__)


@tickwork.every("1s", name="embedded-ping")
def ping(run: tickwork.RunContext) -> None:
    """A declared job that receives its run (schedule, scheduled_for, run_id, attempt, node_id)."""
    log.info("ping %s (run %d on %s)", run.scheduled_for.isoformat(), run.run_id, run.node_id)


def report(recipient: str) -> None:
    """A target for schedules added at run time; ``tickwork.current_run()`` works here too."""
    run = tickwork.current_run()
    log.info("report for %s, due %s", recipient, run.scheduled_for.isoformat())
