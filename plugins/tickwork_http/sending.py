"""One run of the ``http`` executor on its asyncio loop: a free slot, the signed POST within the
run's budget, the capped answer mapped to an outcome (:mod:`.outcomes`), and the outcome
delivered once (:class:`Report`)."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from tickwork.errors import ExecutorError
from tickwork.plugin import tracing
from tickwork.structures import JobCall, Outcome, RunStatus

from . import bodies, outcomes, payload
from .redact import Redactor, safe_url
from .targets import check_target

logger = logging.getLogger("tickwork.http")

# The origin of the request being sent by the current task, for the redirect guard (one value per task).
_ORIGIN: contextvars.ContextVar[tuple[str, str, int] | None] = contextvars.ContextVar(
    "tickwork_http_origin", default=None
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_of(url: httpx.URL) -> tuple[str, str, int]:
    return url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme, 0)


class Report:
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


@dataclass(frozen=True)
class Limits:
    """The executor's options a request obeys (docs/http-executor.md)."""

    timeout: float
    max_concurrency: int
    max_response_bytes: int
    follow_redirects: bool
    verify_tls: bool


class Sender:
    """Sends runs on one ``httpx.AsyncClient``, at most ``limits.max_concurrency`` at a time.

    :param keys: the signing keys (``None``: requests go unsigned)
    :param headers: the static headers of every request (dropped from a redirect that leaves the
        target's origin)
    :param redact: what keeps the secret and the headers' credentials out of errors
    """

    def __init__(self, limits: Limits, keys: list[bytes] | None, headers: dict[str, str], redact: Redactor) -> None:
        self.limits = limits
        self._keys = keys
        self._headers = headers
        self._redact = redact
        self.client = httpx.AsyncClient(
            event_hooks={"request": [self._guard_redirect]},
            verify=limits.verify_tls,
            follow_redirects=limits.follow_redirects,
            timeout=limits.timeout,
            limits=httpx.Limits(
                max_connections=limits.max_concurrency, max_keepalive_connections=limits.max_concurrency
            ),
        )
        self._slots = asyncio.Semaphore(limits.max_concurrency)

    async def run(self, call: JobCall, report: Report, submitted: float) -> None:
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
            check_target(call.target, call.arguments)
        except ExecutorError as exc:
            return Outcome(RunStatus.FAILED, error=self._redact(str(exc), call.target))
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
                f"(max_concurrency = {self.limits.max_concurrency})",
            )
        try:
            started = time.monotonic()
            budget = min(self.limits.timeout, call.timeout - (started - submitted))
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
        body = payload.body_for(call, budget)
        headers = payload.headers_for(call, body, self._keys, self._headers)
        # The run's trace context (traceparent) when a tracing plugin traces the node's runs.
        headers.update(tracing.trace_headers(call))
        url = httpx.URL(call.target)
        auth: httpx.BasicAuth | None = None
        if url.userinfo:
            # httpx logs the request URL; moving the credentials into an auth header keeps them out of that line.
            auth = httpx.BasicAuth(url.username, url.password)
            url = url.copy_with(userinfo=b"")
        _ORIGIN.set(_origin_of(url))
        request = self.client.stream("POST", url, content=body, headers=headers, auth=auth, timeout=budget)
        async with request as response:
            # Leaving the ``stream`` block with the body unread closes the connection, so the rest
            # is never transferred beyond what the socket buffers already hold.
            data, truncated = await bodies.read_capped(
                response.aiter_raw(),
                response.headers.get("content-encoding"),
                response.headers.get("content-length"),
                self.limits.max_response_bytes,
            )
        return outcomes.for_response(
            response,
            data,
            truncated,
            target=call.target,
            follow_redirects=self.limits.follow_redirects,
            redact=self._redact,
        )

    async def _guard_redirect(self, request: httpx.Request) -> None:
        """Drop the static ``headers`` from a redirected request that leaves the target's origin.

        httpx already drops ``Authorization`` there; the static headers may hold credentials too
        (``X-Api-Key``) that were meant for the configured target only.
        """
        origin = _ORIGIN.get()
        if origin is not None and _origin_of(request.url) != origin:
            for name in self._headers:
                request.headers.pop(name, None)
