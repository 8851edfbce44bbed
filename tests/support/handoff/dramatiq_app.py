"""The Dramatiq broker and actors of the hand-off tests: ``dramatiq tests.support.handoff.dramatiq_app``.

The broker is ``$HANDOFF_BROKER`` (``amqp://`` or ``redis://``), the actors' queue
``$HANDOFF_QUEUE``; the worker reads tickwork's database from ``$TICKWORK_CONFIG``.
"""

from __future__ import annotations

import os

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import CurrentMessage

from tests.support.handoff import jobs
from tickwork_dramatiq.worker import install

_URL = os.environ.get("HANDOFF_BROKER", "redis://127.0.0.1:6379/0")
if _URL.startswith("amqp") and _URL.endswith("//"):
    _URL = _URL[:-1] + "%2F"  # kombu's "//" (the vhost "/") is pika's "/%2F"
#: ``$HANDOFF_REDIS_HEARTBEAT_MS``: how long a Redis worker may go without a heartbeat before its
#: unacknowledged messages are requeued (Dramatiq's default, 60 s, unless a test shortens it);
#: with it set, every broker command also runs the queue maintenance that requeues them.
_HEARTBEAT_MS = os.environ.get("HANDOFF_REDIS_HEARTBEAT_MS")
_REDIS_OPTIONS = {"heartbeat_timeout": int(_HEARTBEAT_MS), "maintenance_chance": 1_000_000} if _HEARTBEAT_MS else {}
broker: dramatiq.Broker = (
    RabbitmqBroker(url=_URL) if _URL.startswith("amqp") else RedisBroker(url=_URL, **_REDIS_OPTIONS)
)
broker.add_middleware(CurrentMessage())
dramatiq.set_broker(broker)
install(broker)

QUEUE = os.environ.get("HANDOFF_QUEUE", "default")


def _id() -> str:
    message = CurrentMessage.get_current_message()
    assert message is not None
    return str(message.message_id)


@dramatiq.actor(queue_name=QUEUE)
def work(n: int = 0) -> None:
    jobs.record(_id(), n=n)


@dramatiq.actor(queue_name=QUEUE)
def boom() -> None:
    jobs.record(_id())
    raise jobs.Boom("the task failed on purpose")


@dramatiq.actor(queue_name=QUEUE, time_limit=600_000)
def slow(seconds: float = 3.0) -> None:
    jobs.slow(_id(), seconds)
