"""The ``dramatiq`` executor: each fire is enqueued as a Dramatiq message on ``broker``.

A target is an actor name (``report``) or a ``module:function`` reference (what
``@tickwork.cron`` declares): the actor there gives its name and queue; otherwise the function's
name is taken as the actor's (Dramatiq's default naming). The schedule's arguments are the actor's
keyword arguments. The message id is the fire's message id and the message's options hold the
fire's headers under ``tickwork``. Dramatiq's own retries are off for these messages
(``max_retries = 0``): a fire is retried by tickwork's schedule options, never run twice by the
queue behind the history's back.
"""

from __future__ import annotations

import importlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.common import current_millis

from tickwork.errors import ConfigError, ExecutorError
from tickwork_handoff.executor import HandoffExecutor, Message, Published
from tickwork_handoff.targets import check_arguments, load

from .settings import DramatiqSettings

log = logging.getLogger("tickwork.dramatiq")

#: The message option holding the fire's headers.
OPTION = "tickwork"


def actor_of(target: str) -> tuple[str, str | None]:
    """The actor name ``target`` stands for and its queue when the actor can be imported here."""
    module_name, sep, attribute = target.partition(":")
    if not sep:
        return target, None
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError):
        return attribute.rpartition(".")[2], None
    if isinstance(value, dramatiq.Actor):
        return value.actor_name, value.queue_name
    return attribute.rpartition(".")[2], None


class DramatiqExecutor(HandoffExecutor):
    """Enqueues each run on the Dramatiq broker ``broker`` (``"proj.broker:broker"``).

    :param options: the keys of :class:`~tickwork_dramatiq.settings.DramatiqSettings` (``queue``:
        default the actor's queue, else ``default``; the hand-off options)
    """

    name: ClassVar[str] = "dramatiq"
    worker_side: ClassVar[str] = "`tickwork_dramatiq.worker.install(broker)` where the workers' broker is set up"
    section = DramatiqSettings
    settings: DramatiqSettings

    def __init__(self, broker: str | None = None, **options: Any) -> None:
        super().__init__(**({} if broker is None else {"broker": broker}), **options)
        self.broker_reference = self.settings.broker
        self.queue = self.settings.queue
        self._broker: dramatiq.Broker | None = None

    def __repr__(self) -> str:
        return f"<DramatiqExecutor {self.broker_reference}>"

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        name, _ = actor_of(target)
        if not name or any(c.isspace() for c in name):
            raise ExecutorError(f"dramatiq target {target!r}: not an actor name")
        check_arguments("dramatiq", target, arguments)

    def connect(self) -> None:
        broker = load(self.broker_reference, "[executor.dramatiq] broker")
        if not isinstance(broker, dramatiq.Broker):
            raise ConfigError(f"[executor.dramatiq] broker: {self.broker_reference!r} is not a Dramatiq broker")
        if hasattr(broker, "confirm_delivery"):
            # RabbitMQ publisher confirms: an enqueue returns once the broker took the message.
            broker.confirm_delivery = True
        self._bound_redis_commands(broker)
        self._broker = broker

    def _bound_redis_commands(self, broker: dramatiq.Broker) -> None:
        """Dramatiq's Redis broker waits for Redis without a timeout unless told: a Redis that stops
        answering without closing the connection would hold the publish forever. Its connections
        made from now on (the node's enqueues) time out after ``publish_timeout``."""
        pool = getattr(getattr(broker, "client", None), "connection_pool", None)
        kwargs = getattr(pool, "connection_kwargs", None)
        if not isinstance(kwargs, dict):
            return
        for key in ("socket_timeout", "socket_connect_timeout"):
            given = kwargs.get(key)
            kwargs[key] = self.publish_timeout if given is None else min(float(given), self.publish_timeout)
        if pool is not None and hasattr(pool, "disconnect"):
            pool.disconnect()  # connections made before keep no timeout: make them again

    def publish(self, messages: Sequence[Message]) -> list[Published]:
        assert self._broker is not None
        outgoing: list[dramatiq.Message[Any]] = []
        described: list[str] = []
        for m in messages:
            name, actor_queue = actor_of(m.call.target)
            if actor_queue is None and name in self._broker.get_declared_actors():
                actor_queue = self._broker.get_actor(name).queue_name
            queue = self.queue or actor_queue or "default"
            outgoing.append(
                dramatiq.Message(
                    queue_name=queue,
                    actor_name=name,
                    args=(),
                    kwargs=dict(m.call.arguments),
                    options={OPTION: m.headers, "max_retries": 0},
                    message_id=m.id,
                    message_timestamp=int(time.time() * 1000),
                )
            )
            described.append(f"dramatiq actor {name} (queue {queue})")
        if isinstance(self._broker, RedisBroker):
            return self._pipelined(self._broker, outgoing, described)
        # Another broker (RabbitMQ with confirm_delivery): Dramatiq's own enqueue, one at a time.
        results: list[Published] = []
        for message, where in zip(outgoing, described, strict=True):
            try:
                self._broker.enqueue(message)
                results.append(where)
            except Exception as exc:
                results.append(exc)
        return results

    def _pipelined(
        self, broker: RedisBroker, outgoing: list[dramatiq.Message[Any]], described: list[str]
    ) -> list[Published]:
        """Every message in one Redis pipeline (one round trip), each as Dramatiq's own enqueue
        writes it (its enqueue script, its middleware's enqueue hooks)."""
        from redis.exceptions import ConnectionError, TimeoutError

        # As RedisBroker.enqueue: each enqueue has a Redis id of its own (the message id is the fire's).
        sent = [m.copy(options={"redis_message_id": str(uuid.uuid4())}) for m in outgoing]
        for message in sent:
            broker.emit_before("enqueue", message, None)
        deadline = time.monotonic() + self.publish_timeout
        for tries_left in (1, 0):
            pipe = broker.client.pipeline(transaction=False)
            enqueue = _enqueue_on(broker, pipe)
            for message in sent:
                enqueue(message.queue_name, message.options["redis_message_id"], message.encode())
            try:
                pipe.execute()
                break
            except (ConnectionError, TimeoutError) as exc:
                # Some enqueues may have landed: the same message ids again, of which the worker
                # side runs one (docs/handoff.md#batches).
                if not tries_left or time.monotonic() >= deadline:
                    raise
                log.warning("dramatiq: the connection broke during a batch (%s); sending %d again", exc, len(sent))
        for message in sent:
            broker.emit_after("enqueue", message, None)
        return list(described)


def _enqueue_on(broker: RedisBroker, pipe: Any) -> Callable[..., Any]:
    """The broker's ``do_enqueue`` (its dispatch script, with the arguments RedisBroker._dispatch
    gives it in Dramatiq 2), queued on ``pipe`` instead of run at once; redis-py loads the script
    first if Redis does not have it."""
    dispatch = broker.scripts["dispatch"]
    keys = [broker.namespace]

    def enqueue(queue_name: str, *args: Any) -> Any:
        head = [
            "enqueue",
            current_millis(),
            queue_name,
            broker.broker_id,
            broker.heartbeat_timeout,
            broker.dead_message_ttl,
            broker._should_do_maintenance("enqueue"),
            broker._max_unpack_size(),  # type: ignore[no-untyped-call]
        ]
        return dispatch(keys=keys, args=[*head, *args], client=pipe)

    return enqueue
