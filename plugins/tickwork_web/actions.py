"""The four actions, shared by the API and the browser forms, each logged with who and when.

The log line goes to the ``tickwork.web.actions`` logger at INFO (``tickwork web`` prints INFO by
default), for example::

    action trigger on schedule 'backup' by alice (session 1f2e3d4c) from 10.0.0.7 at 2026-11-24T06:31:02Z: ok
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from tickwork.admin import Admin
from tickwork.admin.info import ScheduleInfo
from tickwork.structures import iso_z

log = logging.getLogger("tickwork.web.actions")

ACTIONS = ("trigger", "enable", "disable", "remove")


def perform(admin: Admin, action: str, name: str, who: str, address: str) -> ScheduleInfo:
    """Do ``action`` on schedule ``name`` and log it (also when it fails, with the reason).

    :raises tickwork.TickworkError: what the admin API raises (unknown name, disabled, ...)
    """
    methods: dict[str, Any] = {
        "trigger": admin.trigger,
        "enable": admin.enable,
        "disable": admin.disable,
        "remove": admin.remove,
    }
    when = iso_z(datetime.now(UTC))
    try:
        info: ScheduleInfo = methods[action](name)
    except Exception as exc:
        log.warning("action %s on schedule %r by %s from %s at %s refused: %s", action, name, who, address, when, exc)
        raise
    log.info("action %s on schedule %r by %s from %s at %s: ok", action, name, who, address, when)
    return info
