"""The ``rq`` executor: each fire is enqueued as an RQ job on the Redis at ``url``.

A target is the dotted path of a function (``proj.tasks.report``) or a ``module:function``
reference (what ``@tickwork.cron`` declares), which becomes ``module.function``. The schedule's
arguments are the function's keyword arguments. The job id is the fire's message id and the
job's ``meta`` holds the fire's headers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from tickwork.errors import ExecutorError
from tickwork_handoff.executor import HandoffExecutor, Message, Published
from tickwork_handoff.targets import check_arguments

from .settings import RQSettings

if TYPE_CHECKING:
    from rq import Queue

log = logging.getLogger("tickwork.rq")


def function_path(target: str) -> str:
    """``module:function`` as RQ's ``module.function``; a dotted path as it is."""
    return target.replace(":", ".", 1)


class RQExecutor(HandoffExecutor):
    """Enqueues each run on the RQ queue ``queue`` of the Redis at ``url``.

    :param options: the keys of :class:`~tickwork_rq.settings.RQSettings` (``queue``,
        ``job_timeout``: RQ's, default the schedule's timeout; ``result_ttl``; the hand-off options)
    """

    name: ClassVar[str] = "rq"
    worker_side: ClassVar[str] = "`rq worker -w tickwork_rq.worker.Worker -j tickwork_rq.worker.Job`"
    section = RQSettings
    settings: RQSettings

    def __init__(self, url: str | None = None, **options: Any) -> None:
        super().__init__(**({} if url is None else {"url": url}), **options)
        self.url = self.settings.url
        self.queue_name = self.settings.queue
        self.job_timeout = self.settings.job_timeout
        self.result_ttl = self.settings.result_ttl
        self._queue: Queue | None = None

    def __repr__(self) -> str:
        return f"<RQExecutor queue={self.queue_name}>"

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        path = function_path(target)
        module, _, function = path.rpartition(".")
        if not module or not function or any(c.isspace() for c in path):
            raise ExecutorError(f"rq target {target!r}: expected a function's dotted path, e.g. proj.tasks.report")
        check_arguments("rq", target, arguments)

    def connect(self) -> None:
        # RQ and redis are imported when the executor starts, not with the plugin: a CLI command
        # that never starts it does not pay for them (about 0.15 s).
        import redis
        from rq import Queue

        # Every command waits for Redis's reply: a returned enqueue is a write Redis acknowledged.
        connection = redis.Redis.from_url(
            self.url, socket_timeout=self.publish_timeout, socket_connect_timeout=self.publish_timeout
        )
        self._queue = Queue(self.queue_name, connection=connection)

    def publish(self, messages: Sequence[Message]) -> list[Published]:
        assert self._queue is not None
        from redis.exceptions import ConnectionError, TimeoutError
        from rq import Queue

        jobs = [
            Queue.prepare_data(
                function_path(m.call.target),
                kwargs=dict(m.call.arguments),
                job_id=m.id,
                meta=dict(m.headers),
                timeout=int(self.job_timeout or m.call.timeout) or 1,
                result_ttl=self.result_ttl,
            )
            for m in messages
        ]
        deadline = time.monotonic() + self.publish_timeout
        for tries_left in (1, 0):
            try:
                # One pipeline in one MULTI/EXEC: every job of the batch in one round trip, all
                # or none; the reply is Redis's acknowledgement of the batch.
                self._queue.enqueue_many(jobs)
                break
            except (ConnectionError, TimeoutError) as exc:
                # The EXEC may have landed before the connection broke: the same job ids again,
                # of which the worker side runs one (docs/handoff.md#batches).
                if not tries_left or time.monotonic() >= deadline:
                    raise
                log.warning("rq: the connection broke during a batch (%s); sending %d jobs again", exc, len(jobs))
        return [f"rq queue {self.queue_name}"] * len(messages)

    def disconnect(self) -> None:
        if self._queue is not None:
            self._queue.connection.close()
