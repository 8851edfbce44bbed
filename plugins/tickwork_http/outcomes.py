"""Turning an HTTP response or a transport error into a run :class:`~tickwork.structures.Outcome`."""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Callable

import httpx

from tickwork.structures import Outcome, RunStatus

from .redact import Redactor, safe_url

#: How many characters of a failed response's body the error keeps.
EXCERPT_CHARS = 500

_WHITESPACE = re.compile(r"\s+")


def excerpt(data: bytes, truncated: bool, redact: Callable[[str], str] = str, limit: int = EXCERPT_CHARS) -> str:
    """A one-line, at most ``limit`` characters long rendering of a response body.

    ``redact`` runs before the cut, so a secret straddling the limit cannot leak its first half.
    """
    text = redact(_WHITESPACE.sub(" ", data.decode("utf-8", errors="replace")).strip())
    if len(text) > limit:
        return text[:limit] + "…"
    return text + "…" if truncated and text else text


def for_response(
    response: httpx.Response,
    body: bytes,
    truncated: bool,
    *,
    target: str,
    follow_redirects: bool,
    redact: Redactor,
) -> Outcome:
    """Map the final response: 2xx succeeds, anything else fails with the status and a body excerpt.

    :param target: the URL as configured, whose credentials (if any) are redacted too
    """
    status = response.status_code
    if 200 <= status < 300:
        return Outcome(RunStatus.SUCCEEDED, detail=f"HTTP {status}")
    if 300 <= status < 400 and not follow_redirects and "location" in response.headers:
        location = safe_url(str(response.url.join(response.headers["location"])))
        error = f"HTTP {status}: redirect to {location} not followed (follow_redirects is false)"
        return Outcome(RunStatus.FAILED, error=redact(error, target))
    text = excerpt(body, truncated, lambda raw: redact(raw, target))
    error = f"HTTP {status}: {text}" if text else f"HTTP {status} {response.reason_phrase}".rstrip()
    return Outcome(RunStatus.FAILED, error=error)


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def for_transport_error(exc: httpx.HTTPError, url: str, redact: Redactor) -> Outcome:
    """Map an error raised before a final response arrived (timeouts excluded) to a FAILED outcome.

    The message says what kind of failure it was (refused, DNS, TLS, ...) and names the URL
    without its credentials or query.
    """
    where = safe_url(url)
    chain = _causes(exc)
    if isinstance(exc, httpx.ConnectError):
        if any(isinstance(e, ssl.SSLError) for e in chain):
            what = "TLS handshake failed"
        elif any(isinstance(e, socket.gaierror) for e in chain) or "name or service not known" in str(exc).lower():
            what = "DNS lookup failed"
        elif any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in str(exc).lower():
            what = "connection refused"
        else:
            what = "cannot connect"
        error = f"{what} for {where}: {exc}"
    elif isinstance(exc, httpx.TooManyRedirects):
        error = f"too many redirects from {where}"
    elif isinstance(exc, httpx.RemoteProtocolError):
        error = f"{where} broke the HTTP exchange: {exc}"
    elif isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        error = f"invalid target URL {where}: {exc}"
    else:
        error = f"request to {where} failed: {type(exc).__name__}: {exc}"
    return Outcome(RunStatus.FAILED, error=redact(error, url))


_TIMEOUT_PHASES: dict[type[BaseException], str] = {
    httpx.ConnectTimeout: "while connecting",
    httpx.WriteTimeout: "while sending the request",
    httpx.ReadTimeout: "while waiting for the response",
    httpx.PoolTimeout: "while waiting for a free connection",
}


def for_timeout(exc: BaseException, url: str, budget: float) -> Outcome:
    """A TIMED_OUT outcome for a request that had ``budget`` seconds in all."""
    phase = _TIMEOUT_PHASES.get(type(exc), "before the response was complete")
    return Outcome(RunStatus.TIMED_OUT, error=f"{safe_url(url)} timed out after {budget:.3g} s {phase}")
