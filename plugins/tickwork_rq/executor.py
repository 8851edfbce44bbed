"""The ``rq`` executor: each fire is enqueued as an RQ job on the Redis at ``url``.

A target is the dotted path of a function (``proj.tasks.report``) or a ``module:function``
reference (what ``@tickwork.cron`` declares), which becomes ``module.function``. The schedule's
arguments are the function's keyword arguments. The job id is the fire's message id and the
job's ``meta`` holds the fire's headers.
"""

from __future__ import annotations

from typing import Any, ClassVar

import redis
from rq import Queue

from tickwork.errors import ConfigError, ExecutorError
from tickwork.sql import dburl
from tickwork.structures import JobCall
from tickwork_handoff.executor import COMMON_OPTIONS, HandoffExecutor
from tickwork_handoff.targets import check_arguments


def function_path(target: str) -> str:
    """``module:function`` as RQ's ``module.function``; a dotted path as it is."""
    return target.replace(":", ".", 1)


class RQExecutor(HandoffExecutor):
    """Enqueues each run on the RQ queue ``queue`` of the Redis at ``url``.

    :param job_timeout: seconds RQ lets the job run (RQ's ``job_timeout``; default: the
        schedule's timeout)
    :param result_ttl: seconds RQ keeps a job's result (RQ's default: 500)
    """

    name: ClassVar[str] = "rq"
    options: ClassVar[dict[str, type | tuple[type, ...]]] = {
        **COMMON_OPTIONS,
        "url": str,
        "queue": str,
        "job_timeout": (int, float),
        "result_ttl": int,
    }

    def __init__(
        self,
        url: str = "",
        *,
        queue: str = "default",
        job_timeout: float | None = None,
        result_ttl: int | None = None,
        **common: Any,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
            raise ConfigError('url: the Redis RQ uses, e.g. "redis://localhost:6379/0"')
        if not isinstance(queue, str) or not queue:
            raise ConfigError(f"queue: the RQ queue's name, got {queue!r}")
        if job_timeout is not None and (isinstance(job_timeout, bool) or job_timeout <= 0):
            raise ConfigError(f"job_timeout: must be a positive number of seconds, got {job_timeout!r}")
        self.url = url
        self.queue_name = queue
        self.job_timeout = job_timeout
        self.result_ttl = result_ttl
        self._queue: Queue | None = None
        super().__init__(
            url=dburl.masked(dburl.parse(url, "url", "redis://HOST:PORT/DB")) if "@" in url else url,
            queue=queue,
            job_timeout=job_timeout,
            result_ttl=result_ttl,
            **common,
        )

    def __repr__(self) -> str:
        return f"<RQExecutor queue={self.queue_name}>"

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        path = function_path(target)
        module, _, function = path.rpartition(".")
        if not module or not function or any(c.isspace() for c in path):
            raise ExecutorError(f"rq target {target!r}: expected a function's dotted path, e.g. proj.tasks.report")
        check_arguments("rq", target, arguments)

    def connect(self) -> None:
        # Every command waits for Redis's reply: a returned enqueue is a write Redis acknowledged.
        connection = redis.Redis.from_url(
            self.url, socket_timeout=self.publish_timeout, socket_connect_timeout=self.publish_timeout
        )
        self._queue = Queue(self.queue_name, connection=connection)

    def publish(self, call: JobCall, message_id: str, headers: dict[str, str]) -> str:
        assert self._queue is not None
        self._queue.enqueue_call(
            function_path(call.target),
            kwargs=dict(call.arguments),
            job_id=message_id,
            meta=dict(headers),
            timeout=int(self.job_timeout or call.timeout) or 1,
            result_ttl=self.result_ttl,
        )
        return f"rq queue {self.queue_name}"

    def disconnect(self) -> None:
        if self._queue is not None:
            self._queue.connection.close()
