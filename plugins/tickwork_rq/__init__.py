"""The ``rq`` executor: a fire becomes an RQ job (``tickwork[rq]``).

:mod:`.executor` enqueues (Redis acknowledges the write); :mod:`.worker` is the worker-side
integration, ``rq worker --job-class tickwork_rq.worker.Job``. See docs/handoff.md.
"""
