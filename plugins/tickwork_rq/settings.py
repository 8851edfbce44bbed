"""The options of ``[executor.rq]``, declared once (importable without RQ)."""

from __future__ import annotations

from tickwork.config import URL, OptionalInteger, OptionalNumber, Text
from tickwork.config.numbers import YEAR
from tickwork_handoff.settings import HandoffSettings


class RQSettings(HandoffSettings, table="executor.rq"):
    """``[executor.rq]`` (docs/handoff.md#options)."""

    url = URL(
        schemes=("redis", "rediss", "unix"),
        example="redis://localhost:6379/0",
        help="The Redis RQ uses, e.g. `redis://localhost:6379/0`.",
    )
    queue = Text("default", nonblank=True, help="The RQ queue's name.")
    job_timeout = OptionalNumber(
        low=0,
        high=YEAR,
        low_open=True,
        help="Seconds RQ lets the job run (RQ's `job_timeout`).",
        shown_default="the schedule's timeout",
    )
    result_ttl = OptionalInteger(
        low=-1, high=int(YEAR), help="Seconds RQ keeps a job's result (`-1`: forever).", shown_default="RQ's, 500"
    )
