"""tickwork_celery.properties encodes a message's AMQP properties byte for byte as py-amqp does
(docs/handoff.md#batches): every type a field table may hold, nested, and the errors py-amqp
raises for what it refuses."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import amqp  # type: ignore[import-untyped]
import pytest
from amqp.exceptions import FrameSyntaxError  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from tickwork_celery.properties import FastMessage, encode_table

scalars = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=20),
    st.booleans(),
    st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1),
    st.sampled_from([2147483647, 2147483648, -2147483647, -2147483648]),
    st.none(),
    st.floats(allow_nan=False),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-(10**6), max_value=10**6),
    st.datetimes(min_value=datetime(1971, 1, 1), timezones=st.just(UTC)),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=10), inner, max_size=4),
    ),
    max_leaves=12,
)
tables = st.dictionaries(st.text(max_size=20), values, max_size=12)


def _amqp_bytes(properties: dict[str, Any]) -> bytes:
    return bytes(amqp.Message("", **properties)._serialize_properties())


def _fast_bytes(properties: dict[str, Any]) -> bytes:
    return FastMessage("", **properties)._serialize_properties()


@settings(max_examples=300, deadline=None)
@given(tables)
def test_a_header_table_is_encoded_as_py_amqp_encodes_it(table: dict[str, Any]) -> None:
    assert _fast_bytes({"application_headers": table}) == _amqp_bytes({"application_headers": table})


@settings(max_examples=200, deadline=None)
@given(
    tables,
    st.fixed_dictionaries(
        {},
        optional={
            "content_type": st.text(max_size=30),
            "content_encoding": st.sampled_from(["utf-8", "binary"]),
            "delivery_mode": st.integers(1, 2),
            "priority": st.integers(0, 255),
            "correlation_id": st.uuids().map(str),
            "reply_to": st.text(max_size=40),
            "expiration": st.integers(0, 10**9).map(str),
            "message_id": st.text(max_size=40),
            "timestamp": st.integers(0, 2**40),
            "type": st.text(max_size=10),
            "user_id": st.text(max_size=10),
            "app_id": st.text(max_size=10),
            "cluster_id": st.text(max_size=10),
        },
    ),
)
def test_every_basic_property_is_encoded_as_py_amqp_encodes_it(table: dict[str, Any], others: dict[str, Any]) -> None:
    properties = {"application_headers": table, **others}
    assert _fast_bytes(properties) == _amqp_bytes(properties)


def test_a_celery_message_s_headers_as_py_amqp_encodes_them() -> None:
    # The shape protocol 2 gives them, with tickwork's own.
    headers = {
        "lang": "py", "task": "proj.tasks.report", "id": "6f1c", "shadow": None, "eta": None,
        "expires": "2026-11-29T12:00:50+00:00", "group": None, "group_index": None, "retries": 0,
        "timelimit": [None, None], "root_id": "6f1c", "parent_id": None, "argsrepr": "()",
        "kwargsrepr": "{'n': 1}", "origin": "gen1@host", "ignore_result": False,
        "replaced_task_nesting": 0, "stamped_headers": None, "stamps": {}, "periodic_task_name": "nightly",
        "tickwork_schedule": "nightly", "tickwork_attempt": "1", "tickwork_run_id": "12", "tickwork_node": "n1",
        "é": "ü", "big": 2**40, "small": -(2**31),
    }  # fmt: skip
    assert encode_table(headers) == _amqp_bytes({"application_headers": headers})[2:]


@pytest.mark.parametrize(
    "table",
    [{"k" * 256: "a key longer than a short string"}, {"bad": object()}, {"bad": [{1, 2}]}],
    ids=["long-key", "object", "set-in-list"],
)
def test_what_py_amqp_refuses_fails_as_py_amqp_fails(table: dict[str, Any]) -> None:
    with pytest.raises(Exception) as theirs:
        _amqp_bytes({"application_headers": table})
    with pytest.raises(type(theirs.value)) as ours:
        _fast_bytes({"application_headers": table})
    assert str(ours.value) == str(theirs.value)
    if isinstance(theirs.value, FrameSyntaxError):
        assert isinstance(ours.value, FrameSyntaxError)
