"""The worker side of a hand-off under OpenTelemetry: a span ``tickwork.task <schedule>`` around
each execution of a run tickwork handed off, in the trace whose context the message carries (the
node's publish span is its parent), so that a fire is one trace from its start on the node to the
worker's task.

The worker integrations (``tickwork_celery.worker``, ``tickwork_rq.worker``,
``tickwork_dramatiq.worker``) turn it on with the worker's tickwork configuration: an ``[otel]``
table there (``traces = true``) and the exporters of the ``OTEL_*`` environment variables, as on a
node. A worker that already set up OpenTelemetry (``opentelemetry-instrument celery ...``) keeps
its provider; Celery's own instrumentation, if it runs, finds the same ``traceparent``.
"""

from __future__ import annotations

import logging

from tickwork.config import Config
from tickwork.plugin import tracing

from .settings import OtelConfig

log = logging.getLogger("tickwork.otel")


def enable(config: Config) -> bool:
    """Trace this process's executions of handed-off runs if ``config`` says so; whether it does.
    A worker without OpenTelemetry installed runs its tasks untraced (logged)."""
    settings = config.find_table(OtelConfig)
    if settings is None or not settings.traces:
        return False
    try:
        from . import providers
        from .tasks import TaskSpans
    except ImportError as exc:
        log.error("tickwork: [otel] is set but OpenTelemetry is missing (pip install 'tickwork[otel]'): %s", exc)
        return False
    tracing.install_task_tracer(TaskSpans(providers.tracer_provider(settings.service_name)))
    return True
