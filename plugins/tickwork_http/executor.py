"""The ``http`` executor: POSTs each run to its target URL and maps the answer to an outcome.

Requests run on one background thread with an asyncio loop and a shared ``httpx.AsyncClient``.
One loop thread serves any ``max_concurrency`` at the cost of one OS thread, and cancelling a
coroutine (hard deadline, shutdown) really stops its request and closes its connection, where a
blocked worker thread could only be abandoned.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from tickwork.abc import Executor
from tickwork.errors import ConfigError, ExecutorError
from tickwork.plugin import signature, tracing
from tickwork.structures import JobCall, Outcome, RunStatus

from . import bodies, logfilter, outcomes, payload
from .redact import Redactor, safe_url, sensitive_values
from .settings import HTTPSettings

logger = logging.getLogger("tickwork.http")

_SCHEMES = ("http", "https")
# How long shutdown(wait=True) gives the loop to finish cancelling and closing connections.
_CLOSE_GRACE = 5.0


# The origin of the request being sent by the current task, for the redirect guard (one value per task).
_ORIGIN: contextvars.ContextVar[tuple[str, str, int] | None] = contextvars.ContextVar(
    "tickwork_http_origin", default=None
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_of(url: httpx.URL) -> tuple[str, str, int]:
    return url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme, 0)


class _Report:
    """Delivers one run's outcome exactly once, whoever gets there first (the run or shutdown)."""

    def __init__(self, run_id: int, on_done: Callable[[Outcome], None], release: Callable[[], None]) -> None:
        self._run_id = run_id
        self._on_done = on_done
        self._release = release
        self._lock = threading.Lock()
        self._done = False

    def __call__(self, outcome: Outcome) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        try:
            self._on_done(outcome)
        except Exception:
            # The engine's callback failing must not take the loop (and every other run) down with it.
            logger.exception("on_done callback raised for run %s", self._run_id)
        finally:
            self._release()


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
        self._client: httpx.AsyncClient | None = None
        self._slots: asyncio.Semaphore | None = None

    def __repr__(self) -> str:
        # The default repr would be fine today; this one guarantees the secret never shows up in one.
        return f"<HTTPExecutor timeout={self.timeout:g} max_concurrency={self.max_concurrency} state={self._state}>"

    # -- targets -----------------------------------------------------------------------------------

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        """Accept an absolute ``http``/``https`` URL with a host, and JSON-serialisable arguments.

        :raises tickwork.errors.ExecutorError: naming what is wrong (credentials in the URL are not echoed)
        """
        if not isinstance(target, str) or not target.strip():
            raise ExecutorError(f"http target must be a URL, got {target!r}")
        shown = safe_url(target)
        if any(ch.isspace() or ord(ch) < 32 for ch in target):
            raise ExecutorError(f"http target {shown!r} contains whitespace or control characters")
        try:
            parts = urlsplit(target)
            parts.port  # noqa: B018 - raises ValueError on a malformed port
        except ValueError as exc:
            raise ExecutorError(f"http target {shown!r} is not a valid URL: {exc}") from None
        if parts.scheme.lower() not in _SCHEMES:
            scheme = parts.scheme or "none"
            raise ExecutorError(f"http target {shown!r} must use http or https, not {scheme!r}")
        if not parts.hostname:
            raise ExecutorError(f"http target {shown!r} has no host")
        try:
            httpx.URL(target)
        except httpx.InvalidURL as exc:
            raise ExecutorError(f"http target {shown!r} is not a valid URL: {exc}") from None
        try:
            json.dumps(arguments, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ExecutorError(f"arguments for {shown!r} are not JSON-serialisable: {exc}") from None

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
            self._client = httpx.AsyncClient(
                event_hooks={"request": [self._guard_redirect]},
                verify=self.verify_tls,
                follow_redirects=self.follow_redirects,
                timeout=self.timeout,
                limits=httpx.Limits(
                    max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency
                ),
            )
            self._slots = asyncio.Semaphore(self.max_concurrency)
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
                report = _Report(call.run_id, on_done, self._release)
                future = asyncio.run_coroutine_threadsafe(self._run(call, report, submitted), self._loop)
        if rejected:
            _Report(call.run_id, on_done, lambda: None)(
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
        assert self._client is not None
        await self._client.aclose()
        asyncio.get_running_loop().call_soon(asyncio.get_running_loop().stop)

    # -- one run -----------------------------------------------------------------------------------

    async def _run(self, call: JobCall, report: _Report, submitted: float) -> None:
        try:
            outcome = await self._attempt(call, submitted)
        except asyncio.CancelledError:
            report(Outcome(RunStatus.FAILED, error="cancelled: the http executor shut down before the response"))
            raise
        except Exception as exc:
            # A bug in here must still end the run rather than leave it running until the reaper.
            logger.exception("http executor failed on run %s", call.run_id)
            outcome = Outcome(
                RunStatus.FAILED, error=self._redact(f"http executor error: {type(exc).__name__}: {exc}", call.target)
            )
        report(outcome)

    async def _attempt(self, call: JobCall, submitted: float) -> Outcome:
        try:
            self.validate_target(call.target, call.arguments)
        except ExecutorError as exc:
            return Outcome(RunStatus.FAILED, error=self._redact(str(exc), call.target))
        assert self._slots is not None
        queued = time.monotonic()
        remaining = call.timeout - (queued - submitted)
        try:
            if remaining <= 0:
                raise TimeoutError
            async with asyncio.timeout(remaining):
                await self._slots.acquire()
        except TimeoutError:
            waited = time.monotonic() - submitted
            return Outcome(
                RunStatus.TIMED_OUT,
                error=f"timed out after {waited:.3g} s waiting for a free slot "
                f"(max_concurrency = {self.max_concurrency})",
            )
        try:
            started = time.monotonic()
            budget = min(self.timeout, call.timeout - (started - submitted))
            try:
                if budget <= 0:
                    raise TimeoutError
                async with asyncio.timeout(budget):
                    outcome = await self._exchange(call, budget)
            except (TimeoutError, httpx.TimeoutException) as exc:
                outcome = outcomes.for_timeout(exc, call.target, max(budget, 0.0))
            except httpx.HTTPError as exc:
                outcome = outcomes.for_transport_error(exc, call.target, self._redact)
        finally:
            self._slots.release()
        logger.debug(
            "POST %s run %s attempt %s: %s in %.3f s",
            safe_url(call.target),
            call.run_id,
            call.attempt,
            outcome.detail or outcome.error,
            time.monotonic() - started,
        )
        return outcome

    async def _exchange(self, call: JobCall, budget: float) -> Outcome:
        assert self._client is not None
        body = payload.body_for(call, budget)
        headers = payload.headers_for(call, body, self._keys, self.headers)
        # The run's trace context (traceparent) when a tracing plugin traces the node's runs.
        headers.update(tracing.trace_headers(call))
        url = httpx.URL(call.target)
        auth: httpx.BasicAuth | None = None
        if url.userinfo:
            # httpx logs the request URL; moving the credentials into an auth header keeps them out of that line.
            auth = httpx.BasicAuth(url.username, url.password)
            url = url.copy_with(userinfo=b"")
        _ORIGIN.set(_origin_of(url))
        request = self._client.stream("POST", url, content=body, headers=headers, auth=auth, timeout=budget)
        async with request as response:
            data, truncated = await self._read_capped(response)
        return outcomes.for_response(
            response, data, truncated, target=call.target, follow_redirects=self.follow_redirects, redact=self._redact
        )

    async def _guard_redirect(self, request: httpx.Request) -> None:
        """Drop the static ``headers`` from a redirected request that leaves the target's origin.

        httpx already drops ``Authorization`` there; the static headers may hold credentials too
        (``X-Api-Key``) that were meant for the configured target only.
        """
        origin = _ORIGIN.get()
        if origin is not None and _origin_of(request.url) != origin:
            for name in self.headers:
                request.headers.pop(name, None)

    async def _read_capped(self, response: httpx.Response) -> tuple[bytes, bool]:
        """Read at most ``max_response_bytes`` of the body, decoded with a bound; tell whether more was left.

        Leaving the ``stream`` block with the body unread closes the connection, so the rest is
        never transferred beyond what the socket buffers already hold.
        """
        return await bodies.read_capped(
            response.aiter_raw(),
            response.headers.get("content-encoding"),
            response.headers.get("content-length"),
            self.max_response_bytes,
        )
