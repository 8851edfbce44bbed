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
import time
from typing import Any, ClassVar

import dramatiq

from tickwork.errors import ConfigError, ExecutorError
from tickwork.structures import JobCall
from tickwork_handoff.executor import HandoffExecutor
from tickwork_handoff.targets import check_arguments, load

from .settings import DramatiqSettings

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

    def publish(self, call: JobCall, message_id: str, headers: dict[str, str]) -> str:
        assert self._broker is not None
        name, actor_queue = actor_of(call.target)
        if actor_queue is None and name in self._broker.get_declared_actors():
            actor_queue = self._broker.get_actor(name).queue_name
        queue = self.queue or actor_queue or "default"
        self._broker.enqueue(
            dramatiq.Message(
                queue_name=queue,
                actor_name=name,
                args=(),
                kwargs=dict(call.arguments),
                options={OPTION: headers, "max_retries": 0},
                message_id=message_id,
                message_timestamp=int(time.time() * 1000),
            )
        )
        return f"dramatiq actor {name} (queue {queue})"
