"""The broker's own publish rate, measured inside a hand-off run (``tickwork bench --workload
handoff``): the same number of messages as the run's fires, of about a task message's size,
published to a queue of their own by the plainest loop of the broker's client, just before the
fires come due. The hand-off rate divided by it is the run's figure: the machine is shared, and
both move with its load.

- RabbitMQ (``amqp://``): kombu's ``Producer.publish`` in a loop on one channel in confirm mode,
  the broker's confirmations read once all are sent (the cheapest confirmed publish kombu offers).
- Redis (``redis://``): ``LPUSH`` in redis-py pipelines of :data:`PIPELINE` commands.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

#: A message body about the size of the workload's task messages (a Celery protocol 2 message
#: with tickwork's headers is 700-900 bytes).
BODY = {"payload": "x" * 700}
#: Commands per Redis pipeline (the hand-off executors' largest batch).
PIPELINE = 1000


def raw_publish(broker: str, messages: int) -> dict[str, Any]:
    """Publish ``messages`` messages to a queue of this measurement's own, then delete it.

    :return: ``{"client", "messages", "seconds", "per_s"}``
    """
    queue = f"tickwork-bench-raw-{uuid.uuid4().hex[:10]}"
    if broker.startswith("amqp"):
        seconds = _amqp(broker, queue, messages)
        client = "kombu Producer.publish, confirms read at the end"
    else:
        seconds = _redis(broker, queue, messages)
        client = f"redis-py LPUSH, pipelines of {PIPELINE}"
    return {"client": client, "messages": messages, "seconds": seconds, "per_s": messages / seconds}


def _amqp(url: str, queue: str, messages: int) -> float:
    from kombu.connection import Connection
    from kombu.messaging import Producer

    with Connection(url, connect_timeout=5) as connection:  # type: ignore[no-untyped-call]
        channel: Any = connection.channel()
        channel.queue_declare(queue, auto_delete=False)
        try:
            channel.confirm_select()
            confirmed = [0]

            def on_ack(delivery_tag: int, multiple: bool) -> None:
                # Tags number the publishes from 1; RabbitMQ confirms them in order.
                confirmed[0] = max(confirmed[0], delivery_tag)

            channel.events["basic_ack"].add(on_ack)
            producer: Any = Producer(channel)  # type: ignore[no-untyped-call]
            started = time.perf_counter()
            for k in range(messages):
                producer.publish(BODY, exchange="", routing_key=queue, headers={"id": str(k)})
            while confirmed[0] < messages:
                connection.connection.drain_events(timeout=60)
            return time.perf_counter() - started
        finally:
            channel.queue_delete(queue)


def _redis(url: str, queue: str, messages: int) -> float:
    import redis

    client = redis.Redis.from_url(url)
    body = json.dumps(BODY)
    try:
        started = time.perf_counter()
        for first in range(0, messages, PIPELINE):
            pipe = client.pipeline(transaction=False)
            for _ in range(first, min(first + PIPELINE, messages)):
                pipe.lpush(queue, body)
            pipe.execute()
        return time.perf_counter() - started
    finally:
        client.delete(queue)
        client.close()
