"""One log record per ended run, on the ``tickwork.runs`` logger.

A run that failed or timed out is logged at ERROR with its traceback (as ``exc_info`` when the job
raised in this process, so error trackers such as Sentry's logging integration group it by
exception; as text otherwise). Every record carries ``schedule``, ``scheduled_for``, ``run_id`` and
``node`` as attributes, which the JSON log format prints as fields.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..plugin.tracebacks import job_frames
from ..structures import Finish, RunStatus

run_log = logging.getLogger("tickwork.runs")

_ERRORS = (RunStatus.FAILED, RunStatus.TIMED_OUT)


def run_fields(schedule: str, scheduled_for: object, run_id: int | None, node: str) -> dict[str, object]:
    """The ``extra`` of a record about one run (see :mod:`tickwork.logformat`)."""
    return {"schedule": schedule, "scheduled_for": scheduled_for, "run_id": run_id, "node": node}


def log_run_ends(node_id: str, finishes: Sequence[Finish], landed: Sequence[bool]) -> None:
    """Log the ends just written: errors at ERROR with the traceback, the rest at INFO."""
    info = run_log.isEnabledFor(logging.INFO)
    for f, ok in zip(finishes, landed, strict=True):
        outcome = f.outcome
        failed = outcome.status in _ERRORS
        if not failed and not info:
            continue
        claim = f.claim
        due = claim.scheduled_for.isoformat(timespec="seconds")
        note = "" if ok else " [claim had been taken over; end not applied]"
        extra = run_fields(claim.spec.name, claim.scheduled_for, claim.run_id, node_id)
        if failed:
            exc = outcome.exception
            text = outcome.error or outcome.detail or ""
            if exc is not None:
                # The message stays one line; the traceback comes from exc_info, from the job's
                # own first frame: how tickwork called it (pool, thread run) is noise to its author.
                first = text.splitlines()[0] if text else repr(exc)
                run_log.error(
                    "%s (due %s, attempt %d): %s - %s%s",
                    claim.spec.name, due, claim.attempt, outcome.status.value, first, note,
                    exc_info=(type(exc), exc, job_frames(exc.__traceback__)), extra=extra,
                )  # fmt: skip
            else:
                run_log.error(
                    "%s (due %s, attempt %d): %s - %s%s",
                    claim.spec.name, due, claim.attempt, outcome.status.value, text, note, extra=extra,
                )  # fmt: skip
            continue
        error = (outcome.error or outcome.detail or "").splitlines()
        run_log.info(
            "%s (due %s): %s%s%s",
            claim.spec.name, due, outcome.status.value, f" - {error[0][:200]}" if error else "", note, extra=extra,
        )  # fmt: skip
