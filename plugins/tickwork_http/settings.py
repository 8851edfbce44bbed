"""The options of ``[executor.http]``, declared once (importable without httpx)."""

from __future__ import annotations

from tickwork.config import Flag, Integer, Number, OptionalText, Section, StringTable
from tickwork.config.numbers import DAY


class HTTPSettings(Section, table="executor.http"):
    """``[executor.http]`` (docs/http-executor.md); every key optional."""

    timeout = Number(
        30,
        low=0,
        high=DAY,
        low_open=True,
        help="Seconds one request may take in all (connect, send, wait, read); the run's own timeout caps it further.",
    )
    max_concurrency = Integer(16, low=1, high=100_000, help="Requests in flight at most; further runs wait in order.")
    max_response_bytes = Integer(
        64 * 1024,
        low=0,
        high=1 << 30,
        help="Bytes of a response body read at most, and decoded at most when it is compressed; the rest is never "
        "read.",
    )
    follow_redirects = Flag(False, help="Follow 3xx answers; when false a 3xx fails the run.")
    secret_env = OptionalText(
        nonblank=True,
        help="Name of the environment variable holding the [Standard Webhooks](http-executor.md#signatures) signing "
        "secret (`whsec_...`; several separated by spaces while rotating), read at node start (unset, empty or "
        "malformed: the node refuses to start).",
        details="Without it requests are sent unsigned.",
        shown_default="none",
    )
    headers = StringTable(
        secret=True,
        help="Extra static headers sent with every request; `${NAME}` works in the values.",
        details="`tickwork config show` masks their values (they often carry an API key).",
    )
    verify_tls = Flag(True, help="Verify the server's TLS certificate.")
