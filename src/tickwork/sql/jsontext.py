"""JSON the stores write as it is: values of JSON columns encoded before the write.

A value of a JSON column is encoded by the engine's serializer (SQLAlchemy's and psycopg's JSON
binding call it once per row). :class:`Encoded` carries text already encoded, and :func:`dumps`,
the serializer of every engine :mod:`tickwork.sql.engines` makes, writes it unchanged; anything
else it encodes as ``json.dumps`` does. The first versions of a sync's new schedules are written
this way (:class:`~tickwork.scheduling.versions.FirstVersions` builds their text once per shape).
"""

from __future__ import annotations

import json
from typing import Any


class Encoded:
    """JSON text to write as it is. Not a ``str``: an engine without :func:`dumps` as its
    serializer refuses it (``TypeError: ... not JSON serializable``) instead of storing the text
    as a JSON string."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Encoded({self.text!r})"


def dumps(value: Any) -> str:
    """The JSON of a column's value: :class:`Encoded` text as it is, anything else by ``json.dumps``."""
    if type(value) is Encoded:
        return value.text
    return json.dumps(value)
