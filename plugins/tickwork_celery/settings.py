"""The options of ``[executor.celery]``, declared once (importable without Celery)."""

from __future__ import annotations

from tickwork.config import OptionalInteger, OptionalNumber, OptionalText, Reference
from tickwork.config.numbers import YEAR
from tickwork_handoff.settings import HandoffSettings


class CelerySettings(HandoffSettings, table="executor.celery"):
    """``[executor.celery]`` (docs/handoff.md#options)."""

    app = Reference(example="proj.celery:app", help="The Celery application, imported at node start.")
    queue = OptionalText(
        nonblank=True, help="Queue to send to.", shown_default="the task's route, else Celery's default queue"
    )
    exchange = OptionalText(nonblank=True, help="Exchange to send to.", shown_default="the queue's")
    routing_key = OptionalText(nonblank=True, help="Routing key.", shown_default="the queue's")
    priority = OptionalInteger(low=0, high=255, help="Message priority, as the broker supports it.")
    expires = OptionalNumber(
        low=0,
        high=YEAR,
        low_open=True,
        help="Seconds after the fire's hand-off after which a worker discards the message.",
    )
