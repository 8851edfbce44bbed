"""The ``dramatiq`` executor: a fire becomes a Dramatiq message (``tickwork[dramatiq]``).

:mod:`.executor` enqueues (confirmed by RabbitMQ, acknowledged by Redis); :mod:`.worker` is the
worker-side middleware, ``tickwork_dramatiq.worker.install(broker)``. See docs/handoff.md.
"""
