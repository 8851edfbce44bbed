"""What the ``http`` executor sends: the JSON body and the headers of one call."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version

from tickwork.plugin import signature
from tickwork.structures import JobCall, iso_z, utc

from .redact import safe_url

IDEMPOTENCY_HEADER = "Idempotency-Key"
RUN_ID_HEADER = "X-Tickwork-Run-Id"
ATTEMPT_HEADER = "X-Tickwork-Attempt"

#: Headers the executor sets itself; the ``headers`` option may not override them.
RESERVED_HEADERS = frozenset(
    name.lower()
    for name in (
        "Content-Type",
        "Content-Length",
        "Host",
        "Transfer-Encoding",
        IDEMPOTENCY_HEADER,
        RUN_ID_HEADER,
        ATTEMPT_HEADER,
        signature.ID_HEADER,
        signature.TIMESTAMP_HEADER,
        signature.SIGNATURE_HEADER,
    )
)

# RFC 9110 token characters: what a header name may be made of.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def _user_agent() -> str:
    try:
        return f"tickwork/{version('tickwork')}"
    except PackageNotFoundError:
        return "tickwork"


USER_AGENT = _user_agent()


def check_header(name: object, value: object) -> str | None:
    """Return why ``name: value`` cannot be an extra static header, or ``None`` if it can.

    The reason never quotes the value, which may be a credential.
    """
    if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
        return f"header name {name!r} is not a valid HTTP header name"
    if name.lower() in RESERVED_HEADERS:
        return f"header {name!r} is set by the executor and cannot be overridden"
    if not isinstance(value, str):
        return f"header {name!r} must have a string value, got {type(value).__name__}"
    if any(ch in value for ch in "\r\n\0"):
        return f"header {name!r} has a line break or NUL in its value"
    return None


def iso_utc(value: datetime) -> str:
    """An aware datetime as ISO-8601 in UTC with a ``Z`` suffix."""
    return iso_z(utc(value))


def fire_id(schedule: str, scheduled_for: datetime) -> str:
    """The ``webhook-id`` of a fire: the same for every attempt of one (schedule, due time).

    A digest rather than the name itself, so any schedule name makes a valid header value.
    """
    digest = hashlib.sha256(f"{schedule}\0{iso_utc(scheduled_for)}".encode()).hexdigest()
    return f"tw_{digest[:40]}"


def body_for(call: JobCall, timeout: float) -> bytes:
    """The JSON body of ``call``: compact, UTF-8, no NaN (strict parsers reject it).

    ``target`` (the URL without user info, query or fragment) is signed with the rest, so a
    receiver that checks it refuses a request replayed to another endpoint sharing the secret.

    :param timeout: seconds the executor will wait for the response, sent so the receiver can tell
        whether it should answer early (e.g. 202) and work in the background
    :raises TypeError, ValueError: if the arguments are not JSON-serialisable
    """
    document = {
        "schedule": call.schedule,
        "target": safe_url(call.target),
        "scheduled_for": iso_utc(call.scheduled_for),
        "run_id": call.run_id,
        "attempt": call.attempt,
        "node_id": call.node_id,
        "arguments": call.arguments,
        "timeout": round(timeout, 3),
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def headers_for(
    call: JobCall,
    body: bytes,
    keys: list[bytes] | None,
    extra: Mapping[str, str],
    *,
    timestamp: int | None = None,
) -> dict[str, str]:
    """The request headers of ``call``; signed over ``body`` (one signature per key) when keys are configured.

    The ``webhook-id`` and the idempotency key are the fire's identity, so every attempt of one fire
    shares them: a receiver that already did the work for attempt 1 (whose response was lost)
    recognises attempt 2. Only ``webhook-id`` is signed.
    """
    msg_id = fire_id(call.schedule, call.scheduled_for)
    headers = {
        "User-Agent": USER_AGENT,
        # A compressed answer could expand far beyond max_response_bytes while it is decoded.
        "Accept-Encoding": "identity",
    }
    headers.update(extra)
    headers.update(
        {
            "Content-Type": "application/json",
            IDEMPOTENCY_HEADER: msg_id,
            RUN_ID_HEADER: str(call.run_id),
            ATTEMPT_HEADER: str(call.attempt),
        }
    )
    if keys:
        headers.update(signature.sign(keys, msg_id, body, timestamp))
    else:
        headers[signature.ID_HEADER] = msg_id
    return headers
