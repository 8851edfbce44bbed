"""The ``celery`` executor: each fire is sent as a Celery task message, confirmed by the broker.

A target is a Celery task name (``proj.tasks.report``) or a ``module:function`` reference (what
``@tickwork.cron`` declares): the object there, if it is a Celery task, gives its registered name;
otherwise ``module.function`` is taken as the name (Celery's default naming). The schedule's
arguments are the task's keyword arguments, or the whole call when they are exactly the three
keys ``args``, ``kwargs`` and ``options`` (what ``tickwork import celery-beat`` writes: see
docs/celery.md#what-the-schedules-hold): positional and keyword arguments, and the entry's own
``apply_async`` options, which take precedence over the executor's.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from tickwork.errors import ConfigError, ExecutorError
from tickwork_handoff.executor import HandoffExecutor, Message, Published
from tickwork_handoff.targets import check_arguments, load

from .links import BrokenBatch, Link, Send
from .messages import DELAYED, Builder, Templates
from .settings import CelerySettings

if TYPE_CHECKING:
    # Celery itself is imported by the application the executor loads, when it starts: a CLI
    # command that never starts the executor does not pay for importing it (about 0.2 s).
    from celery import Celery

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


#: kombu's Redis transports (their socket timeouts bound a publish).
_REDIS_SCHEMES = frozenset({"redis", "rediss", "sentinel", "redis+socket"})


def _scheme(url: object) -> str:
    # The first broker of a list (kombu's failover) is the one connected to first.
    first = url.split(";")[0] if isinstance(url, str) else ""
    return first.partition("://")[0].lower()


#: The header naming the periodic task a message was sent for, as django-celery-beat sets it.
PERIODIC_TASK_NAME = "periodic_task_name"

#: The keys of a schedule's arguments that hold a whole call rather than keyword arguments.
CALL_KEYS = frozenset({"args", "kwargs", "options"})
#: The ``apply_async`` options a call may carry. The message id, the headers naming the fire and
#: the publish's retry and confirmation stay the executor's: they are what fences the fire.
CALL_OPTIONS = frozenset({"queue", "exchange", "routing_key", "priority", "expires", "headers", "countdown", "eta"})


def call_parts(target: str, arguments: dict[str, Any]) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    """The positional arguments, keyword arguments and options of the call ``arguments`` stand for.

    :raises tickwork.errors.ExecutorError: for a call whose parts have the wrong shape, or an
        option this executor does not pass on
    """
    if set(arguments) != CALL_KEYS:
        return [], dict(arguments), {}
    args, kwargs, options = arguments["args"], arguments["kwargs"], arguments["options"]
    if not isinstance(args, list) or not isinstance(kwargs, dict) or not isinstance(options, dict):
        raise ExecutorError(
            f"celery target {target!r}: a call in arguments needs args as a list, kwargs and options as objects"
        )
    if not isinstance(options.get("headers", {}), dict):
        raise ExecutorError(f"celery target {target!r}: the call's headers must be an object")
    unknown = sorted(set(options) - CALL_OPTIONS)
    if unknown:
        raise ExecutorError(
            f"celery target {target!r}: option(s) {', '.join(unknown)} cannot be passed on "
            f"(known: {', '.join(sorted(CALL_OPTIONS))})"
        )
    return args, kwargs, options


class CeleryExecutor(HandoffExecutor):
    """Sends each run to the Celery application ``app`` (``"proj.celery:app"``).

    :param options: the keys of :class:`~tickwork_celery.settings.CelerySettings` (``queue``,
        ``exchange``, ``routing_key``, ``priority``, ``expires`` and the hand-off options)
    """

    name: ClassVar[str] = "celery"
    worker_side: ClassVar[str] = (
        "`tickwork_celery.worker.install(app)` in the module that defines the Celery app the workers run"
    )
    section = CelerySettings
    settings: CelerySettings

    def __init__(self, app: str | None = None, **options: Any) -> None:
        super().__init__(**({} if app is None else {"app": app}), **options)
        settings = self.settings
        routing = {"queue": settings.queue, "exchange": settings.exchange, "routing_key": settings.routing_key}
        self.routing = {key: value for key, value in routing.items() if value is not None}
        self.priority = settings.priority
        self.expires = settings.expires
        self.app_reference = settings.app
        self._app: Celery | None = None
        self._messages: Builder | None = None
        #: Each publishing thread's connection (:mod:`.links`), and all of them, to close at shutdown.
        self._links = threading.local()
        self._links_lock = threading.Lock()
        self._all_links: set[Link] = set()

    def __repr__(self) -> str:
        return f"<CeleryExecutor {self.app_reference}>"

    def _load_app(self) -> Celery:
        if self._app is None:
            app = load(self.app_reference, "[executor.celery] app")
            from celery import Celery

            if not isinstance(app, Celery):
                raise ConfigError(f"[executor.celery] app: {self.app_reference!r} is not a Celery application")
            self._app = app
        return self._app

    def _builder(self, app: Celery) -> Builder:
        if self._messages is None:
            self._messages = Builder(app)
        return self._messages

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        name = task_name(target)
        if not name or any(c.isspace() for c in name):
            raise ExecutorError(f"celery target {target!r}: not a task name")
        check_arguments("celery", target, arguments)
        call_parts(target, arguments)

    def connect(self) -> None:
        app = self._load_app()
        # RabbitMQ publisher confirms are collected per batch by the publishing threads' own
        # connections (.links); Redis acknowledges every write anyway.
        options = dict(app.conf.broker_transport_options or {})
        # A broker that does not answer fails the attempt instead of holding the thread: the
        # connection timeout bounds connecting to RabbitMQ; with Redis, kombu's socket timeouts
        # (none by default) bound every command, the publish included, so a Redis that stops
        # answering without closing the connection (frozen, failed over, behind a dropped NAT
        # entry) fails the attempt within publish_timeout instead of blocking it forever.
        if _scheme(app.conf.broker_write_url or app.conf.broker_url) in _REDIS_SCHEMES:
            for key in ("socket_timeout", "socket_connect_timeout"):
                given = options.get(key)
                options[key] = self.publish_timeout if given is None else min(float(given), self.publish_timeout)
        app.conf.broker_transport_options = options
        app.conf.broker_connection_timeout = min(float(app.conf.broker_connection_timeout or 4.0), self.publish_timeout)

    def publish(self, messages: Sequence[Message]) -> list[Published]:
        app = self._load_app()
        deadline = time.monotonic() + self.publish_timeout
        builder = self._builder(app)
        templates = Templates(builder) if builder.usable() else None
        sends = [self._sender(app, message, templates) for message in messages]
        results: list[Published | None] = [None] * len(messages)
        todo = list(range(len(messages)))
        # A connection that breaks mid-batch leaves messages unconfirmed, some of which may have
        # reached the broker: they are sent once more, on a new connection, with the same ids
        # (the worker side runs one copy: docs/handoff.md#batches). A second break fails them.
        for tries_left in (1, 0):
            cause: Exception | None = None
            try:
                link = self._link()
            except Exception as exc:
                # Nothing of the batch was written: a connection that breaks while it is being
                # made (the other thread's batch broke it) is tried once more like a broken batch.
                outcomes: list[bool | Exception | None] = [None] * len(todo)
                cause = exc
            else:
                try:
                    outcomes = link.send([sends[i][0] for i in todo], max(deadline - time.monotonic(), 0.001))
                except BrokenBatch as broken:
                    self._drop_link()
                    outcomes = broken.outcomes
                    cause = broken.cause
            unknown = []
            for i, outcome in zip(todo, outcomes, strict=True):
                if outcome is None:
                    unknown.append(i)
                else:
                    results[i] = outcome if isinstance(outcome, Exception) else sends[i][1]
            todo = unknown
            if not todo:
                break
            assert cause is not None  # an outcome is unknown only when the connection broke
            if not tries_left or time.monotonic() >= deadline:
                for i in todo:
                    results[i] = cause
                break
            log.warning("celery: the connection broke during a batch (%s); sending %d messages again", cause, len(todo))
        return [result if result is not None else ExecutorError("no outcome") for result in results]

    def _sender(self, app: Celery, message: Message, templates: Templates | None) -> tuple[Send, str]:
        """How to send ``message`` on a given producer, and its description: built from the
        batch's ``templates`` (:mod:`.messages`), or by Celery's own ``send_task`` when they are
        ``None`` or the call is delayed."""
        call = message.call
        name = task_name(call.target)
        args, kwargs, own = call_parts(call.target, dict(call.arguments))
        options: dict[str, Any] = {"priority": self.priority, "expires": self.expires, **self.routing}
        options.update({key: value for key, value in own.items() if key != "headers"})
        # The fire's own headers last: an entry's headers cannot rename the fire. The schedule is
        # also the message's periodic_task_name, the header django-celery-beat's scheduler sets
        # (django-celery-results stores it with the task's result).
        headers = {**own.get("headers", {}), PERIODIC_TASK_NAME: call.schedule, **message.headers}
        queue = options.get("queue")
        description = f"celery task {name}" + (f" (queue {queue})" if queue else "")
        # The queue is declared with the first message to it on a connection.
        route = f"{name}\x00{queue}"
        if templates is not None and not DELAYED.intersection(options):
            template = templates.get(name, options)
            builder = templates.builder

            def build(link: Link) -> None:
                builder.send(link.producer, template, message.id, args, kwargs, headers,
                             [] if route in link.declared else None)  # fmt: skip
                link.declared.add(route)

            return build, description

        def send(link: Link) -> None:
            # Celery's own message (protocol 2, its routes, the task's options), written on the
            # thread's producer: no connection from the pool, no wait for the broker per message
            # (the link collects the confirmations of the batch). No retry loop inside kombu: a
            # failed write breaks the batch.
            declare: dict[str, list[object]] = {} if route not in link.declared else {"declare": []}
            app.send_task(
                name, args=args, kwargs=kwargs, task_id=message.id, headers=headers, producer=link.producer,
                retry=False, add_to_parent=False, **options, **declare,
            )  # fmt: skip
            link.declared.add(route)

        return send, description

    def _link(self) -> Link:
        link: Link | None = getattr(self._links, "link", None)
        if link is None:
            link = Link(self._load_app())
            self._links.link = link
            with self._links_lock:
                self._all_links.add(link)
        return link

    def _drop_link(self) -> None:
        link: Link | None = getattr(self._links, "link", None)
        self._links.link = None
        if link is not None:
            with self._links_lock:
                self._all_links.discard(link)
            link.close()

    def disconnect(self) -> None:
        with self._links_lock:
            links, self._all_links = self._all_links, set()
        for link in links:
            link.close()
        if self._app is not None:
            self._app.close()
