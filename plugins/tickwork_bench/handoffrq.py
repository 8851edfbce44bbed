"""The RQ function of ``tickwork bench --workload handoff --executor rq`` (run by
``rq worker -w tickwork_rq.worker.SimpleWorker -j tickwork_rq.worker.Job``)."""

from __future__ import annotations

from rq import get_current_job

from .handoffjobs import record_fire


def fire() -> None:
    job = get_current_job()
    record_fire(str(job.id) if job is not None else "")
