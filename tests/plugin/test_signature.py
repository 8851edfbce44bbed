"""tickwork.signature: Standard Webhooks signing and verifying, checked against the reference package."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime
from email.message import Message

import pytest
import standardwebhooks

from tickwork.errors import TickworkError
from tickwork.plugin.signature import (
    ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    SignatureError,
    keys,
    new_secret,
    sign,
    verify,
)

KEY = bytes(range(32))
SECRET = "whsec_" + base64.b64encode(KEY).decode()
OTHER = "whsec_" + base64.b64encode(bytes(range(100, 132))).decode()
BODY = b'{"schedule":"nightly","run_id":7}'
TS = 1_717_171_717
MSG = "tw_0123abcd"


def test_sign_produces_the_standard_headers() -> None:
    digest = hmac.new(KEY, f"{MSG}.{TS}.".encode() + BODY, hashlib.sha256).digest()
    expected = "v1," + base64.b64encode(digest).decode()

    assert sign(SECRET, MSG, BODY, TS) == {ID_HEADER: MSG, TIMESTAMP_HEADER: str(TS), SIGNATURE_HEADER: expected}
    assert sign(KEY, MSG, BODY, TS) == sign(SECRET, MSG, BODY, TS)


def test_the_reference_package_signs_exactly_like_us() -> None:
    reference = standardwebhooks.Webhook(SECRET)
    assert (
        reference.sign(MSG, datetime.fromtimestamp(TS, UTC), BODY.decode())
        == sign(SECRET, MSG, BODY, TS)[SIGNATURE_HEADER]
    )
    # And it accepts what we sign now.
    assert reference.verify(BODY, sign(SECRET, MSG, BODY)) == {"schedule": "nightly", "run_id": 7}


def test_several_secrets_give_one_signature_each_and_any_verifies() -> None:
    headers = sign(f"{SECRET} {OTHER}", MSG, BODY, TS)
    assert len(headers[SIGNATURE_HEADER].split(" ")) == 2
    verify(SECRET, BODY, headers, now=TS)
    verify(OTHER, BODY, headers, now=TS)
    # A receiver rotating secrets accepts the old and the new one for a while.
    verify([new_secret(), SECRET], BODY, sign(SECRET, MSG, BODY, TS), now=TS)
    verify(f"{new_secret()} {SECRET}", BODY, sign(SECRET, MSG, BODY, TS), now=TS)
    with pytest.raises(SignatureError, match="does not match"):
        verify([new_secret(), new_secret()], BODY, headers, now=TS)


def test_verify_returns_the_webhook_id() -> None:
    assert verify(SECRET, BODY, sign(SECRET, MSG, BODY, TS), now=TS + 10) == MSG


def test_explicit_header_values() -> None:
    headers = sign(SECRET, MSG, BODY, TS)
    verify(SECRET, BODY, msg_id=MSG, timestamp=headers[TIMESTAMP_HEADER], signature=headers[SIGNATURE_HEADER], now=TS)
    verify(SECRET, BODY, msg_id=MSG, timestamp=TS, signature=headers[SIGNATURE_HEADER], now=TS)


def test_headers_are_matched_case_insensitively() -> None:
    headers = {name.upper(): value for name, value in sign(SECRET, MSG, BODY, TS).items()}
    verify(SECRET, BODY, headers, now=TS)

    message = Message()  # what http.server hands a handler as self.headers
    for name, value in sign(SECRET, MSG, BODY, TS).items():
        message[name.title()] = value
    verify(SECRET, BODY, message, now=TS)


@pytest.mark.parametrize(
    ("change", "value"),
    [
        ("body", BODY.replace(b"7", b"8")),
        (ID_HEADER, "tw_another-fire"),
        (TIMESTAMP_HEADER, str(TS + 60)),  # a replay with a refreshed timestamp
    ],
)
def test_any_change_to_a_signed_part_is_rejected(change: str, value: str | bytes) -> None:
    headers = sign(SECRET, MSG, BODY, TS)
    body = BODY
    if change == "body":
        assert isinstance(value, bytes)
        body = value
    else:
        assert isinstance(value, str)
        headers[change] = value
    with pytest.raises(SignatureError, match="does not match"):
        verify(SECRET, body, headers, now=TS + 60)


def test_wrong_secret_is_rejected() -> None:
    with pytest.raises(SignatureError, match="does not match"):
        verify(OTHER, BODY, sign(SECRET, MSG, BODY, TS), now=TS)


@pytest.mark.parametrize("offset", [301, -301, 86_400])
def test_timestamp_outside_tolerance_is_rejected(offset: int) -> None:
    with pytest.raises(SignatureError, match="outside the tolerance of 300 s"):
        verify(SECRET, BODY, sign(SECRET, MSG, BODY, TS), now=TS + offset)


@pytest.mark.parametrize("offset", [300, -300, 0])
def test_timestamp_at_the_tolerance_edge_passes(offset: int) -> None:
    verify(SECRET, BODY, sign(SECRET, MSG, BODY, TS), now=TS + offset)


def test_custom_tolerance() -> None:
    headers = sign(SECRET, MSG, BODY, TS)
    verify(SECRET, BODY, headers, now=TS + 20, tolerance=30)
    with pytest.raises(SignatureError, match="tolerance of 5 s"):
        verify(SECRET, BODY, headers, now=TS + 20, tolerance=5)


GOOD = sign(SECRET, MSG, BODY, TS)[SIGNATURE_HEADER]


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, f"missing {ID_HEADER}"),
        ({ID_HEADER: MSG}, f"missing {TIMESTAMP_HEADER}"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: str(TS)}, f"missing {SIGNATURE_HEADER}"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: "", SIGNATURE_HEADER: GOOD}, f"missing {TIMESTAMP_HEADER}"),
        ({ID_HEADER: "two words", TIMESTAMP_HEADER: str(TS), SIGNATURE_HEADER: GOOD}, "visible ASCII"),
        ({ID_HEADER: "x" * 300, TIMESTAMP_HEADER: str(TS), SIGNATURE_HEADER: GOOD}, "visible ASCII"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: "yesterday", SIGNATURE_HEADER: GOOD}, "is not Unix seconds"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: "1717171717.5", SIGNATURE_HEADER: GOOD}, "is not Unix seconds"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: "-1", SIGNATURE_HEADER: GOOD}, "is not Unix seconds"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: "9" * 400, SIGNATURE_HEADER: GOOD}, "is not Unix seconds"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: "\u0661\u0667" * 5, SIGNATURE_HEADER: GOOD}, "is not Unix seconds"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: str(TS), SIGNATURE_HEADER: "v1=abc"}, "holds no v1,<base64"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: str(TS), SIGNATURE_HEADER: "v2," + GOOD[3:]}, "holds no v1,<base64"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: str(TS), SIGNATURE_HEADER: "v1,!!!!"}, "holds no v1,<base64"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: str(TS), SIGNATURE_HEADER: "v1,AAAA"}, "holds no v1,<base64"),
        ({ID_HEADER: MSG, TIMESTAMP_HEADER: str(TS), SIGNATURE_HEADER: "v1,é" * 10}, "holds no v1,<base64"),
    ],
)
def test_missing_or_malformed_headers_are_rejected(headers: dict[str, str], message: str) -> None:
    with pytest.raises(SignatureError, match=message) as caught:
        verify(SECRET, BODY, headers, now=TS)
    assert len(str(caught.value)) < 200  # an attacker's huge header is not echoed


def test_a_good_signature_among_junk_passes() -> None:
    verify(SECRET, BODY, msg_id=MSG, timestamp=TS, signature=f"v1,AAAA v2,xyz garbage {GOOD}", now=TS)


@pytest.mark.parametrize(
    ("secret", "message"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("s3cret-not-in-the-standard-form", "secret 1: must start with 'whsec_'"),
        (f"{SECRET} whsec_***", "secret 2: the part after 'whsec_' is not base64"),
        ("whsec_" + base64.b64encode(b"short").decode(), "decodes to 5 bytes"),
        (b"", "must not be empty"),
        ([], "at least one secret"),
    ],
)
def test_malformed_secrets_are_value_errors_that_do_not_quote_them(
    secret: str | bytes | list[str], message: str
) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        keys(secret)
    if isinstance(secret, str):
        for part in secret.split():
            assert part[6:] not in str(caught.value) or not part[6:]


def test_new_secret_is_in_the_standard_form() -> None:
    secret = new_secret()
    assert secret.startswith("whsec_")
    assert keys(secret)[0] == base64.b64decode(secret[6:])
    assert len(keys(secret)[0]) == 32
    assert new_secret() != secret


def test_misuse_is_a_programming_error() -> None:
    headers = sign(SECRET, MSG, BODY, TS)
    with pytest.raises(TypeError, match="not both"):
        verify(SECRET, BODY, headers, timestamp=TS, signature=headers[SIGNATURE_HEADER])
    with pytest.raises(ValueError, match="msg_id"):
        sign(SECRET, "has space", BODY, TS)


def test_signature_error_is_a_tickwork_error() -> None:
    assert issubclass(SignatureError, TickworkError)
