"""Celery task messages of a batch of fires, built the way ``app.send_task`` builds them, without
``send_task`` per message.

``send_task`` does, for every message, work that is the same for every message of one task name
and one set of options: the registry lookup of the task, its execution options, the router, the
expiry's conversion, the parent task's lookup, an ``AsyncResult``, a producer from the pool (a
quarter of a publish on this machine: docs/benchmarks.md). Here that work is done once per
(task name, options) of a batch (a :class:`Template`) with the app's own pieces, in
``send_task``'s order; per message remain the app's protocol-2 builder (``app.amqp.as_task_v2``,
with the message id, arguments, expiry and reply-to ``send_task`` would give it) and the app's
``send_task_message`` (queue, exchange, routing key, delivery mode, the ``before_task_publish``
and ``after_task_publish`` signals, kombu's publish). The worker receives the message
``send_task`` would have sent.

A call whose options need what only ``send_task`` does (an ``eta`` or ``countdown``: Celery's
native delayed delivery decides per message; sent events; a router that may route on the
arguments; a parent task, the node running inside a Celery worker) is sent by ``send_task``
itself: :meth:`Builder.usable` and :data:`DELAYED` say which.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Celery
    from kombu.messaging import Producer

#: The options that Celery's native delayed delivery decides on per message: such a call is
#: sent by ``send_task``.
DELAYED = frozenset({"eta", "countdown"})

#: The options that send_task passes to the message builder rather than to the publish.
_BUILDER_OPTIONS = ("time_limit", "soft_time_limit", "expires")


@dataclass(frozen=True)
class Template:
    """What every message of one task name and set of options shares."""

    name: str
    #: The routed options ``send_task_message`` receives (queue, exchange, routing key,
    #: priority, the broker's expiration...), as ``send_task`` passes them.
    routed: Mapping[str, Any]
    time_limit: Any
    soft_time_limit: Any
    #: Seconds (or a date) after which a worker discards the message (``None``: never).
    expires: Any
    ignore_result: Any


class Builder:
    """Builds and writes the messages of ``app`` on a producer (one per publishing thread)."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        self.amqp: Any = app.amqp
        conf = app.conf
        saferepr = _saferepr()
        maxlevels = conf.task_repr_maxlevels
        # The representations of no arguments, which most schedules have: computed once, as
        # as_task_v2 computes them (send_task gives it `args or ()`, `kwargs or {}`).
        self._empty_args = saferepr((), self.amqp.argsrepr_maxsize, maxlevels=maxlevels)
        self._empty_kwargs = saferepr({}, self.amqp.kwargsrepr_maxsize, maxlevels=maxlevels)
        self._send_message: Any = self.amqp.send_task_message
        # What as_task_v2 writes as the message's origin when given none (host and process).
        self._origin = _anon_nodename()

    def usable(self) -> bool:
        """Whether this batch's messages may be built here at all (else: ``send_task``); a call
        with an ``eta`` or ``countdown`` (:data:`DELAYED`) never is."""
        app: Any = self.app
        conf = app.conf
        # send_task warns that eager mode is ignored; sent events are sent by it.
        if conf.task_send_sent_event or conf.task_always_eager:
            return False
        if app.current_worker_task is not None:  # its ids become the messages' root and parent
            return False
        # A map of routes (task_routes as a dict or glob patterns) routes on the name only; a
        # function may route on the arguments, which a template does not see.
        return all(type(route).__name__ == "MapRoute" for route in self.amqp.router.routes)

    def template(self, name: str, options: Mapping[str, Any]) -> Template:
        """The template of ``name`` with ``options`` (``apply_async`` options), as ``send_task``
        would resolve them for a message without arguments-dependent routing."""
        app: Any = self.app
        task_type = app._tasks.get(name)
        merged = dict(options)
        if task_type is not None and hasattr(task_type, "_get_exec_options"):
            get_exec_options = task_type._get_exec_options
            exec_options = get_exec_options() if inspect.ismethod(get_exec_options) else None
            if exec_options:
                merged = {**{k: v for k, v in exec_options.items() if v is not None}, **merged}
        time_limit, soft_time_limit, expires = (merged.pop(key, None) for key in _BUILDER_OPTIONS)
        ignore_result = merged.pop("ignore_result", None)
        routed = self.amqp.router.route(merged, name, (), {}, task_type)
        if expires is not None:
            routed["expiration"] = max(self._seconds(expires), 0)
        return Template(name, routed, time_limit, soft_time_limit, expires, ignore_result)

    def _seconds(self, expires: Any) -> float:
        """``expires`` in seconds from now, as send_task computes the broker's expiration."""
        from celery.utils.time import isoparse, subtract_datetimes

        app: Any = self.app
        if isinstance(expires, datetime):
            return float(subtract_datetimes(expires, app.now()).total_seconds())
        if isinstance(expires, str):
            return float(subtract_datetimes(isoparse(expires), app.now()).total_seconds())
        return float(expires)

    def send(
        self,
        producer: Producer,
        template: Template,
        task_id: str,
        args: list[Any],
        kwargs: dict[str, Any],
        headers: dict[str, Any],
        declare: list[object] | None,
    ) -> None:
        """Build the message of ``task_id`` from ``template`` and write it on ``producer``
        (without retries: a failed write is the caller's)."""
        app: Any = self.app
        message = self.amqp.as_task_v2(
            task_id, template.name, args, kwargs,
            expires=template.expires, time_limit=template.time_limit, soft_time_limit=template.soft_time_limit,
            reply_to=app.thread_oid, ignore_result=template.ignore_result, origin=self._origin,
            argsrepr=None if args else self._empty_args, kwargsrepr=None if kwargs else self._empty_kwargs,
        )  # fmt: skip
        if not template.ignore_result:
            app.backend.on_task_call(producer, task_id)
        options = {**template.routed, "headers": headers, "retry": False}
        if declare is not None:
            options["declare"] = declare
        self._send_message(producer, template.name, message, **options)


class Templates:
    """The templates of one batch, by task name and options (made on first use)."""

    def __init__(self, builder: Builder) -> None:
        self.builder = builder
        self._made: dict[object, Template] = {}

    def get(self, name: str, options: Mapping[str, Any]) -> Template:
        try:
            key: object = (name, frozenset(options.items()))
            hash(key)
        except TypeError:  # an option of a call that is not hashable (a list, an object)
            return self.builder.template(name, options)
        found = self._made.get(key)
        if found is None:
            found = self._made[key] = self.builder.template(name, options)
        return found


def _saferepr() -> Any:
    from celery.utils.saferepr import saferepr

    return saferepr


def _anon_nodename() -> str:
    from celery.utils.nodenames import anon_nodename

    return str(anon_nodename())
