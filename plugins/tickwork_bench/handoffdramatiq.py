"""The Dramatiq broker and actor of ``tickwork bench --workload handoff --executor dramatiq``:
``dramatiq tickwork_bench.handoffdramatiq``. The broker is ``$TICKWORK_BENCH_BROKER``, the
actor's queue ``$TICKWORK_BENCH_QUEUE``; the worker reads tickwork's database from
``$TICKWORK_CONFIG``."""

from __future__ import annotations

import os

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import CurrentMessage

from tickwork_dramatiq.worker import install

from .handoffjobs import BROKER_ENV, QUEUE_ENV, record_fire

_URL = os.environ.get(BROKER_ENV, "redis://127.0.0.1:6379/0")
if _URL.startswith("amqp") and _URL.endswith("//"):
    _URL = _URL[:-1] + "%2F"  # kombu's "//" (the vhost "/") is pika's "/%2F"
broker: dramatiq.Broker = (
    RabbitmqBroker(url=_URL) if _URL.startswith("amqp") else RedisBroker(url=_URL)  # type: ignore[no-untyped-call]
)
broker.add_middleware(CurrentMessage())
dramatiq.set_broker(broker)
install(broker)


@dramatiq.actor(queue_name=os.environ.get(QUEUE_ENV, "default"), max_retries=0)
def fire() -> None:
    message = CurrentMessage.get_current_message()
    record_fire(str(message.message_id) if message is not None else "")
