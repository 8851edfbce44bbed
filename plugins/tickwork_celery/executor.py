"""The ``celery`` executor: each fire is sent as a Celery task message, confirmed by the broker.

A target is a Celery task name (``proj.tasks.report``) or a ``module:function`` reference (what
``@tickwork.cron`` declares): the object there, if it is a Celery task, gives its registered name;
otherwise ``module.function`` is taken as the name (Celery's default naming). The schedule's
arguments are the task's keyword arguments.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any, ClassVar

from celery import Celery

from tickwork.errors import ConfigError, ExecutorError
from tickwork.structures import JobCall
from tickwork_handoff.executor import COMMON_OPTIONS, HandoffExecutor
from tickwork_handoff.targets import check_arguments, load

log = logging.getLogger("tickwork.celery")


def task_name(target: str) -> str:
    """The Celery task name ``target`` stands for (see the module's doc)."""
    module_name, sep, attribute = target.partition(":")
    if not sep:
        return target
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError):
        return f"{module_name}.{attribute}"
    name = getattr(value, "name", None)
    return name if isinstance(name, str) and name else f"{module_name}.{attribute}"


class CeleryExecutor(HandoffExecutor):
    """Sends each run to the Celery application ``app`` (``"proj.celery:app"``).

    :param queue: queue to send to (default: the task's route, else Celery's default queue)
    :param exchange: exchange to send to (default: the queue's)
    :param routing_key: routing key (default: the queue's)
    :param priority: message priority (0-255, as the broker supports)
    :param expires: seconds after the fire's hand-off after which a worker discards the message
    """

    name: ClassVar[str] = "celery"
    options: ClassVar[dict[str, type | tuple[type, ...]]] = {
        **COMMON_OPTIONS,
        "app": str,
        "queue": str,
        "exchange": str,
        "routing_key": str,
        "priority": int,
        "expires": (int, float),
    }

    def __init__(
        self,
        app: str = "",
        *,
        queue: str | None = None,
        exchange: str | None = None,
        routing_key: str | None = None,
        priority: int | None = None,
        expires: float | None = None,
        **common: Any,
    ) -> None:
        if not isinstance(app, str) or ":" not in app:
            raise ConfigError(f'app: the Celery application as "module:attribute", e.g. "proj.celery:app", got {app!r}')
        if priority is not None and (isinstance(priority, bool) or not 0 <= priority <= 255):
            raise ConfigError(f"priority: must be an integer from 0 to 255, got {priority!r}")
        if expires is not None and (isinstance(expires, bool) or expires <= 0):
            raise ConfigError(f"expires: must be a positive number of seconds, got {expires!r}")
        routing = {"queue": queue, "exchange": exchange, "routing_key": routing_key}
        self.routing = {key: value for key, value in routing.items() if value is not None}
        self.priority = priority
        self.expires = expires
        self.app_reference = app
        self._app: Celery | None = None
        super().__init__(
            app=app,
            priority=priority,
            expires=expires,
            queue=queue,
            exchange=exchange,
            routing_key=routing_key,
            **common,
        )

    def __repr__(self) -> str:
        return f"<CeleryExecutor {self.app_reference}>"

    def _load_app(self) -> Celery:
        if self._app is None:
            app = load(self.app_reference, "[executor.celery] app")
            if not isinstance(app, Celery):
                raise ConfigError(f"[executor.celery] app: {self.app_reference!r} is not a Celery application")
            self._app = app
        return self._app

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        name = task_name(target)
        if not name or any(c.isspace() for c in name):
            raise ExecutorError(f"celery target {target!r}: not a task name")
        check_arguments("celery", target, arguments)

    def connect(self) -> None:
        app = self._load_app()
        # RabbitMQ publisher confirms: a publish returns only once the broker took the message
        # (Redis acknowledges every write anyway). Set here, so a user's app needs nothing.
        options = dict(app.conf.broker_transport_options or {})
        options.setdefault("confirm_publish", True)
        app.conf.broker_transport_options = options
        # A broker that does not answer fails the attempt instead of holding the thread.
        app.conf.broker_connection_timeout = min(float(app.conf.broker_connection_timeout or 4.0), self.publish_timeout)

    def publish(self, call: JobCall, message_id: str, headers: dict[str, str]) -> str:
        app = self._load_app()
        name = task_name(call.target)
        app.send_task(
            name,
            kwargs=dict(call.arguments),
            task_id=message_id,
            headers=headers,
            priority=self.priority,
            expires=self.expires,
            # No silent retry loop inside kombu: a failed publish is this attempt's failure.
            retry=False,
            confirm_timeout=self.publish_timeout,
            **self.routing,
        )
        return f"celery task {name}" + (f" (queue {self.routing['queue']})" if "queue" in self.routing else "")

    def disconnect(self) -> None:
        if self._app is not None:
            self._app.close()
