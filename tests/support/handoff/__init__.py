"""Queue applications the hand-off tests run real workers on (``celery -A``, ``rq worker``, ``dramatiq``)."""
