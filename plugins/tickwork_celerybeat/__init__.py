"""``tickwork import celery-beat`` and ``tickwork import django-celery-beat``: Celery beat's
schedules as tickwork schedules run by the ``celery`` executor (docs/celery.md)."""
