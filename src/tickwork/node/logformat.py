"""Log output of ``tickwork run``: ``[logging] format = "text"`` (default) or ``"json"``.

An embedded node never configures logging: the host application does (its handlers receive the
``tickwork.*`` records, including the ``schedule``/``scheduled_for``/``run_id``/``node``
attributes of run records). :class:`JsonFormatter` is public so that an application can use it.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from ..structures import iso_z
from .logstream import BackgroundStreamHandler

TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"

#: Record attributes copied into the JSON object when present (set through ``extra=``).
RUN_FIELDS = ("schedule", "scheduled_for", "run_id", "node")


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso_z(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time``, ``level``, ``logger``, ``message``, the run fields
    when the record has them, and ``traceback`` when it carries an exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": iso_z(datetime.fromtimestamp(record.created, UTC), timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in RUN_FIELDS:
            if name in record.__dict__:
                entry[name] = _plain(record.__dict__[name])
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["traceback"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False)


_handler: logging.Handler | None = None


def configure(level: str | int, fmt: str = "text", *, background: bool = False) -> None:
    """Set up logging for the command line: stderr, ``fmt`` ``text`` or ``json``. Like
    :func:`logging.basicConfig`, it adds no handler when the root logger already has one (other
    than its own from an earlier call, whose format it changes).

    :param background: write from a thread of its own (:mod:`.logstream`): for a process that
        runs a node, whose loop must not wait for stderr; short commands write in place, in
        order with what they print
    """
    global _handler
    root = logging.getLogger()
    formatter = JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT)
    ours = _handler is not None and _handler in root.handlers
    if ours and background and not isinstance(_handler, BackgroundStreamHandler):
        assert _handler is not None
        root.removeHandler(_handler)
        _handler.close()
        ours = False
    if ours:
        assert _handler is not None
        _handler.setFormatter(formatter)
    elif not root.handlers:
        _handler = BackgroundStreamHandler(sys.stderr) if background else logging.StreamHandler(sys.stderr)
        _handler.setFormatter(formatter)
        root.addHandler(_handler)
    root.setLevel(level)
    logging.getLogger("alembic").setLevel(logging.WARNING)
