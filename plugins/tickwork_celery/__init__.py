"""The ``celery`` executor: a fire becomes a Celery task message (``tickwork[celery]``).

:mod:`.executor` publishes (confirmed by the broker); :mod:`.worker` is the worker-side
integration, ``tickwork_celery.worker.install(app)``. See docs/handoff.md.
"""
