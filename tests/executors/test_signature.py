"""tickwork.signature: signing and verifying HTTP calls."""

from __future__ import annotations

import hashlib
import hmac
from email.message import Message

import pytest

from tickwork.errors import TickworkError
from tickwork.signature import SIGNATURE_HEADER, TIMESTAMP_HEADER, SignatureError, sign, verify

SECRET = "shared-secret-2b7e"
BODY = b'{"schedule":"nightly","run_id":7}'
TS = 1_717_171_717


def test_sign_produces_the_documented_headers() -> None:
    expected = hmac.new(SECRET.encode(), b"1717171717." + BODY, hashlib.sha256).hexdigest()

    assert sign(SECRET, BODY, TS) == {TIMESTAMP_HEADER: "1717171717", SIGNATURE_HEADER: f"v1={expected}"}
    assert sign(SECRET.encode(), BODY, TS) == sign(SECRET, BODY, TS)


def test_sign_defaults_to_the_current_time() -> None:
    headers = sign(SECRET, BODY)
    verify(SECRET, BODY, headers)  # default now and tolerance


@pytest.mark.parametrize("secret", [SECRET, SECRET.encode()])
def test_round_trip(secret: str | bytes) -> None:
    verify(secret, BODY, sign(SECRET, BODY, TS), now=TS + 10)


def test_explicit_timestamp_and_signature() -> None:
    headers = sign(SECRET, BODY, TS)
    verify(SECRET, BODY, timestamp=headers[TIMESTAMP_HEADER], signature=headers[SIGNATURE_HEADER], now=TS)
    verify(SECRET, BODY, timestamp=TS, signature=headers[SIGNATURE_HEADER], now=TS)


def test_headers_are_matched_case_insensitively() -> None:
    headers = {name.lower(): value for name, value in sign(SECRET, BODY, TS).items()}
    verify(SECRET, BODY, headers, now=TS)

    message = Message()  # what http.server hands a handler as self.headers
    for name, value in sign(SECRET, BODY, TS).items():
        message[name.upper()] = value
    verify(SECRET, BODY, message, now=TS)


def test_tampered_body_is_rejected() -> None:
    headers = sign(SECRET, BODY, TS)
    with pytest.raises(SignatureError, match="does not match"):
        verify(SECRET, BODY.replace(b"7", b"8"), headers, now=TS)


def test_wrong_secret_is_rejected() -> None:
    with pytest.raises(SignatureError, match="does not match"):
        verify("not-the-secret", BODY, sign(SECRET, BODY, TS), now=TS)


def test_signature_is_bound_to_the_timestamp() -> None:
    headers = sign(SECRET, BODY, TS)
    headers[TIMESTAMP_HEADER] = str(TS + 60)  # a replay with a refreshed timestamp
    with pytest.raises(SignatureError, match="does not match"):
        verify(SECRET, BODY, headers, now=TS + 60)


@pytest.mark.parametrize("offset", [301, -301, 86_400])
def test_timestamp_outside_tolerance_is_rejected(offset: int) -> None:
    headers = sign(SECRET, BODY, TS)
    with pytest.raises(SignatureError, match="outside the tolerance of 300 s"):
        verify(SECRET, BODY, headers, now=TS + offset)


@pytest.mark.parametrize("offset", [300, -300, 0])
def test_timestamp_at_the_tolerance_edge_passes(offset: int) -> None:
    verify(SECRET, BODY, sign(SECRET, BODY, TS), now=TS + offset)


def test_custom_tolerance() -> None:
    headers = sign(SECRET, BODY, TS)
    verify(SECRET, BODY, headers, now=TS + 20, tolerance=30)
    with pytest.raises(SignatureError, match="tolerance of 5 s"):
        verify(SECRET, BODY, headers, now=TS + 20, tolerance=5)


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, f"missing {TIMESTAMP_HEADER}"),
        ({TIMESTAMP_HEADER: str(TS)}, f"missing {SIGNATURE_HEADER}"),
        ({TIMESTAMP_HEADER: "", SIGNATURE_HEADER: "v1=00"}, f"missing {TIMESTAMP_HEADER}"),
        ({TIMESTAMP_HEADER: "yesterday", SIGNATURE_HEADER: "v1=00"}, "is not an integer"),
        ({TIMESTAMP_HEADER: str(TS), SIGNATURE_HEADER: "sha256=abc"}, "holds no v1=<hex> signature"),
        ({TIMESTAMP_HEADER: str(TS), SIGNATURE_HEADER: "v1=" + "zz" * 32}, "holds no v1=<hex> signature"),
        ({TIMESTAMP_HEADER: str(TS), SIGNATURE_HEADER: "v1=é" * 10}, "holds no v1=<hex> signature"),
    ],
)
def test_missing_or_malformed_headers_are_rejected(headers: dict[str, str], message: str) -> None:
    with pytest.raises(SignatureError, match=message):
        verify(SECRET, BODY, headers, now=TS)


def test_any_of_several_signatures_or_secrets_may_match() -> None:
    good = sign(SECRET, BODY, TS)[SIGNATURE_HEADER]
    verify(SECRET, BODY, timestamp=TS, signature=f"v1={'0' * 64}, {good}", now=TS)
    # A receiver rotating secrets accepts the old and the new one for a while.
    verify(["new-secret-x", SECRET], BODY, sign(SECRET, BODY, TS), now=TS)
    with pytest.raises(SignatureError):
        verify(["new-secret-x", "older-secret"], BODY, sign(SECRET, BODY, TS), now=TS)


def test_misuse_is_a_programming_error() -> None:
    headers = sign(SECRET, BODY, TS)
    with pytest.raises(TypeError, match="not both"):
        verify(SECRET, BODY, headers, timestamp=TS, signature=headers[SIGNATURE_HEADER])
    with pytest.raises(ValueError, match="must not be empty"):
        sign("", BODY, TS)
    with pytest.raises(ValueError, match="at least one secret"):
        verify([], BODY, headers, now=TS)


def test_signature_error_is_a_tickwork_error() -> None:
    assert issubclass(SignatureError, TickworkError)
