"""The ``http`` executor: POSTs each run to its target URL and maps the answer to an outcome.

Requests run on one background thread with an asyncio loop and a shared ``httpx.AsyncClient``.
One loop thread serves any ``max_concurrency`` at the cost of one OS thread, and cancelling a
coroutine (hard deadline, shutdown) really stops its request and closes its connection, where a
blocked worker thread could only be abandoned.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from tickwork.abc import Executor
from tickwork.errors import ConfigError, ExecutorError
from tickwork.plugin import signature
from tickwork.structures import JobCall, Outcome, RunStatus

from . import logfilter, payload
from .redact import Redactor, sensitive_values
from .sending import Limits, Report, Sender
from .settings import HTTPSettings
from .targets import check_target

logger = logging.getLogger("tickwork.http")

# How long shutdown(wait=True) gives the loop to finish cancelling and closing connections.
_CLOSE_GRACE = 5.0


def _config_error(option: str, problem: str) -> ConfigError:
    return ConfigError(f"[executor.http] {option}: {problem}")


class HTTPExecutor(Executor):
    """Runs a schedule by POSTing a signed JSON document to its target URL.

    See docs/http-executor.md for the request format, the status mapping and receiver code.

    :param options: the keys of :class:`~tickwork_http.settings.HTTPSettings`: ``timeout`` (the
        run's own timeout, counted from :meth:`submit`, caps it further), ``max_concurrency``,
        ``max_response_bytes``, ``follow_redirects``, ``secret_env`` (read at :meth:`start`),
        ``headers``, ``verify_tls`` (against certifi's CA bundle, or the one named by
        ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``)
    """

    section = HTTPSettings
    settings: HTTPSettings

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.timeout = self.settings.timeout
        self.max_concurrency = self.settings.max_concurrency
        self.max_response_bytes = self.settings.max_response_bytes
        self.follow_redirects = self.settings.follow_redirects
        self.verify_tls = self.settings.verify_tls
        self.secret_env = self.settings.secret_env
        for name, value in self.settings.headers.items():
            problem = payload.check_header(name, value)
            if problem is not None:
                raise _config_error("headers", problem)
        self.headers = dict(self.settings.headers)
        self._keys: list[bytes] | None = None
        self._redact = Redactor(sensitive_values(self.headers))
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._state = "new"
        self._active = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sender: Sender | None = None

    def __repr__(self) -> str:
        # The default repr would be fine today; this one guarantees the secret never shows up in one.
        return f"<HTTPExecutor timeout={self.timeout:g} max_concurrency={self.max_concurrency} state={self._state}>"

    # -- targets -----------------------------------------------------------------------------------

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        """Accept an absolute ``http``/``https`` URL with a host, and JSON-serialisable arguments
        (:func:`~tickwork_http.targets.check_target`)."""
        check_target(target, arguments)

    # -- lifecycle ---------------------------------------------------------------------------------

    def _read_secret(self) -> tuple[str, list[bytes]] | None:
        """The secret_env variable's value and the signing keys it holds (``whsec_...``, space-separated)."""
        if self.secret_env is None:
            return None
        value = os.environ.get(self.secret_env)
        if value is None:
            raise ConfigError(
                f"[executor.http] secret_env names the environment variable {self.secret_env!r}, which is not set"
            )
        if not value.strip():
            raise ConfigError(f"[executor.http] the environment variable {self.secret_env!r} (secret_env) is empty")
        try:
            keys = signature.keys(value)
        except ValueError as exc:
            # The message names the position of the bad secret, never its value.
            raise ConfigError(
                f"[executor.http] the environment variable {self.secret_env!r} (secret_env): {exc}"
            ) from None
        return value, keys

    def start(self) -> None:
        """Read the secret, open the client and start the loop thread.

        :raises tickwork.errors.ConfigError: if ``secret_env`` names an unset or empty variable
        :raises tickwork.errors.ExecutorError: if called twice
        """
        with self._lock:
            if self._state != "new":
                raise ExecutorError(f"http executor: start() called while {self._state}")
            secret = self._read_secret()
            if secret is None:
                logger.warning("[executor.http] has no secret_env: requests are sent unsigned")
            else:
                value, self._keys = secret
                parts = value.split()
                # Also bare: an echo of the key material without its prefix must not pass either.
                bare = [part.removeprefix(signature.SECRET_PREFIX) for part in parts]
                self._redact = Redactor([*parts, *bare, *sensitive_values(self.headers)])
            logfilter.install(self._redact)
            limits = Limits(
                self.timeout, self.max_concurrency, self.max_response_bytes, self.follow_redirects, self.verify_tls
            )
            self._sender = Sender(limits, self._keys, self.headers, self._redact)
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._serve, args=(self._loop,), name="tickwork-http", daemon=True)
            self._thread.start()
            self._state = "running"

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def capacity(self) -> int:
        """Free request slots: ``max_concurrency`` minus the calls running or waiting."""
        with self._lock:
            return max(0, self.max_concurrency - self._active)

    def _release(self) -> None:
        with self._idle:
            self._active -= 1
            self._idle.notify_all()

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        """Queue ``call`` on the loop and return at once.

        After :meth:`shutdown`, ``on_done`` is called at once, from this thread, with a FAILED outcome.

        :raises tickwork.errors.ExecutorError: if :meth:`start` was not called
        """
        submitted = time.monotonic()
        with self._lock:
            if self._state == "new":
                raise ExecutorError("http executor: submit() called before start()")
            if self._state == "closed":
                rejected = True
            else:
                rejected = False
                assert self._loop is not None
                self._active += 1
                assert self._sender is not None
                report = Report(call.run_id, on_done, self._release)
                future = asyncio.run_coroutine_threadsafe(self._sender.run(call, report, submitted), self._loop)
        if rejected:
            Report(call.run_id, on_done, lambda: None)(
                Outcome(RunStatus.FAILED, error="not sent: the http executor is shut down")
            )
            return

        def settled(done: concurrent.futures.Future[None]) -> None:
            # A task cancelled before its first step never runs its own handler; report for it here.
            if done.cancelled():
                report(Outcome(RunStatus.FAILED, error="not sent: the http executor shut down first"))
            elif done.exception() is not None:
                report(Outcome(RunStatus.FAILED, error=f"http executor error: {done.exception()!r}"))

        future.add_done_callback(settled)

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        """Stop accepting calls and close the client.

        With ``wait``, runs in flight get up to ``timeout`` seconds to end; whatever is still
        running or queued then is cancelled and reported FAILED. Without ``wait`` they are cancelled
        at once and this returns without waiting for the loop to finish.
        """
        with self._lock:
            previous = self._state
            self._state = "closed"
        if previous != "running":
            return
        assert self._loop is not None and self._thread is not None
        on_loop = threading.current_thread() is self._thread
        if wait and not on_loop:
            with self._idle:
                self._idle.wait_for(lambda: self._active == 0, timeout)
        closing = asyncio.run_coroutine_threadsafe(self._close(), self._loop)
        if wait and not on_loop:
            try:
                closing.result(_CLOSE_GRACE)
            except Exception:
                logger.exception("http executor did not close cleanly")
            self._thread.join(_CLOSE_GRACE)

    async def _close(self) -> None:
        current = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert self._sender is not None
        await self._sender.client.aclose()
        asyncio.get_running_loop().call_soon(asyncio.get_running_loop().stop)
