"""A message's AMQP properties (its header table above all) encoded byte for byte as py-amqp
encodes them, in fewer steps.

py-amqp writes each entry of a header table through a chain of ``isinstance`` tests and a
``BytesIO`` write per part; a Celery protocol-2 message carries some 25 headers (Celery's and
tickwork's), and their encoding was a third of a publish's time on this machine
(docs/benchmarks.md, "Hand-off: where a fire's time goes"). :class:`FastMessage` encodes the
values a task message holds (text, integers, booleans, ``None``, lists and nested tables) by
their exact type and hands any other value to py-amqp's own item writer; anything unexpected
(a key too long, a value py-amqp refuses) makes it encode the whole message with py-amqp's own
code, which raises py-amqp's own error. tests/plugins/celery/test_celery_properties.py compares
the bytes with py-amqp's for every type a table may hold.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from io import BytesIO
from typing import Any

import amqp  # type: ignore[import-untyped]
from amqp import serialization

_u8 = struct.Struct("B").pack
_u16 = struct.Struct(">H").pack
_u32 = struct.Struct(">I").pack
_u64 = struct.Struct(">Q").pack
_long_string = struct.Struct(">cI").pack
_int32 = struct.Struct(">ci").pack
_int64 = struct.Struct(">cq").pack

#: The entry keys met so far, encoded (the same few dozen names on every message).
_keys: dict[str, bytes] = {}
_MOST_KEYS = 4096


def _key(key: str) -> bytes:
    found = _keys.get(key)
    if found is None:
        encoded = key.encode("utf-8", "surrogatepass")
        found = _u8(len(encoded)) + encoded  # struct.error past 255 bytes, as py-amqp
        if len(_keys) < _MOST_KEYS:
            _keys[key] = found
    return found


def _item(value: Any, append: Callable[[bytes], object]) -> None:
    kind = type(value)
    if kind is str:
        data = value.encode("utf-8", "surrogatepass")
        append(_long_string(b"S", len(data)))
        append(data)
    elif kind is bool:
        append(b"t\x01" if value else b"t\x00")
    elif kind is int:
        # py-amqp's own bounds (-2**31 itself is written as a long long).
        append(_int32(b"I", value) if -2147483647 <= value <= 2147483647 else _int64(b"L", value))
    elif value is None:
        append(b"V")
    elif kind is dict:
        append(b"F")
        append(encode_table(value))
    elif kind is list or kind is tuple:
        append(b"A")
        append(_encode_array(value))
    else:  # bytes, float, Decimal, datetime, subclasses: py-amqp's own writer
        out = BytesIO()
        serialization._write_item(value, out.write, [])
        append(out.getvalue())


def encode_table(table: Mapping[Any, Any]) -> bytes:
    """``table`` as an AMQP field table (its length first), as py-amqp's ``_write_table`` writes it."""
    parts: list[bytes] = []
    append = parts.append
    for key, value in table.items():
        if type(key) is str:
            append(_key(key))
        else:
            raw = bytes(key)
            append(_u8(len(raw)) + raw)
        _item(value, append)
    data = b"".join(parts)
    return _u32(len(data)) + data


def _encode_array(values: Sequence[Any]) -> bytes:
    parts: list[bytes] = []
    for value in values:
        _item(value, parts.append)
    data = b"".join(parts)
    return _u32(len(data)) + data


def _short_string(value: Any) -> bytes:
    value = value or ""
    data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    return _u8(len(data)) + data


#: How each property type of a basic message is written (py-amqp's ``dumps``).
_WRITERS: dict[str, Callable[[Any], bytes]] = {
    "s": _short_string,
    "F": lambda value: encode_table(value or {}),
    "o": _u8,
    "L": _u64,
}


class FastMessage(amqp.Message):  # type: ignore[misc]
    """py-amqp's basic message whose properties are encoded by this module."""

    def _serialize_properties(self) -> bytes:
        try:
            return self._encode_properties()
        except Exception:
            # py-amqp's own encoding raises its own error (or, if this module missed a case,
            # gets it right).
            return bytes(super()._serialize_properties())

    def _encode_properties(self) -> bytes:
        props = self.properties
        shift, flag_bits = 15, 0
        flags: list[int] = []
        values: list[bytes] = []
        for key, kind in self.PROPERTIES:
            value = props.get(key)
            if value is not None:
                if shift == 0:
                    flags.append(flag_bits)
                    flag_bits, shift = 0, 15
                flag_bits |= 1 << shift
                if kind != "bit":
                    values.append(_WRITERS[kind](value))
            shift -= 1
        flags.append(flag_bits)
        return b"".join([*(_u16(bits) for bits in flags), *values])


def use_fast_messages(channel: Any) -> None:
    """Make kombu's py-amqp ``channel`` build :class:`FastMessage` messages (this channel only)."""
    prepare = type(channel).prepare_message

    def prepare_message(*args: Any, **kwargs: Any) -> Any:
        return prepare(channel, *args, _Message=FastMessage, **kwargs)

    channel.prepare_message = prepare_message
