"""The RQ functions of the hand-off tests (``rq worker -w tickwork_rq.worker.Worker ...``)."""

from __future__ import annotations

from rq import get_current_job

from tests.support.handoff import jobs


def _id() -> str:
    job = get_current_job()
    assert job is not None
    return str(job.id)


def work(n: int = 0) -> None:
    jobs.record(_id(), n=n)


def boom() -> None:
    jobs.record(_id())
    raise jobs.Boom("the task failed on purpose")


def slow(seconds: float = 3.0) -> None:
    jobs.slow(_id(), seconds)
