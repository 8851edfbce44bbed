"""Query-string parameters of the pages and the API, checked: a malformed one is a
:class:`BadQuery` (HTTP 400) naming the parameter, never a silently ignored filter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from tickwork.admin.health import Health
from tickwork.structures import RunStatus, ScheduleState, parse_iso

#: The schedules page's "show" filter -> (enabled, failing) for the admin API.
SHOW = {"all": (None, None), "enabled": (True, None), "disabled": (False, None), "failing": (None, True)}
MAX_LIMIT = 1000
PAGE_SIZES = (25, 50, 100, 200)


class BadQuery(ValueError):
    """A query parameter that cannot be used; the message names it."""


def integer(params: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadQuery(f"{name}: expected a whole number, got {raw!r}") from None
    if not low <= value <= high:
        raise BadQuery(f"{name}: must be from {low} to {high}, got {value}")
    return value


def boolean(params: Mapping[str, str], name: str) -> bool | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    lowered = raw.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise BadQuery(f"{name}: expected true or false, got {raw!r}")


def choice(params: Mapping[str, str], name: str, choices: list[str], default: str | None = None) -> str | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    if raw not in choices:
        raise BadQuery(f"{name}: {raw!r} is not one of {', '.join(choices)}")
    return raw


def statuses(params: Mapping[str, str], name: str = "status") -> list[RunStatus]:
    """``status=failed,timed_out`` (one or several, comma-separated)."""
    raw = params.get(name)
    if not raw:
        return []
    allowed = [s.value for s in RunStatus]
    out = []
    for item in raw.split(","):
        item = item.strip()
        if item not in allowed:
            raise BadQuery(f"{name}: {item!r} is not one of {', '.join(allowed)}")
        out.append(RunStatus(item))
    return out


def instant(params: Mapping[str, str], name: str) -> datetime | None:
    """An ISO-8601 time; without an offset it is UTC (as everywhere in tickwork)."""
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return parse_iso(raw)
    except ValueError:
        raise BadQuery(f"{name}: expected an ISO-8601 time such as 2026-01-31T12:00Z, got {raw!r}") from None


def text(params: Mapping[str, str], name: str, limit: int = 200) -> str | None:
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        return None
    if len(raw) > limit:
        raise BadQuery(f"{name}: at most {limit} characters")
    return raw.strip()


@dataclass(frozen=True)
class ScheduleFilter:
    """What the schedules page and ``GET /api/schedules`` filter by."""

    search: str | None = None
    state: ScheduleState | None = None
    enabled: bool | None = None
    failing: bool | None = None
    health: Health | None = None

    def admin_kwargs(self) -> dict[str, object]:
        return {
            "search": self.search,
            "state": self.state,
            "enabled": self.enabled,
            "failing": self.failing,
            "health": self.health,
        }


def schedule_filter(params: Mapping[str, str]) -> tuple[ScheduleFilter, str]:
    """The filter of the schedules page (``q``, ``state``, ``show``) and the ``show`` value."""
    state = choice(params, "state", [s.value for s in ScheduleState])
    show = choice(params, "show", list(SHOW), "all") or "all"
    enabled, failing = SHOW[show]
    return (
        ScheduleFilter(
            text(params, "q"), None if state is None else ScheduleState(state), enabled, failing, health_choice(params)
        ),
        show,
    )


def health_choice(params: Mapping[str, str]) -> Health | None:
    """``health=failing`` (one health state; see docs/observability.md)."""
    value = choice(params, "health", [h.value for h in Health])
    return None if value is None else Health(value)


def api_schedule_filter(params: Mapping[str, str]) -> ScheduleFilter:
    """``GET /api/schedules``: ``q``, ``state``, ``enabled``, ``failing`` (true/false) and ``health``."""
    state = choice(params, "state", [s.value for s in ScheduleState])
    return ScheduleFilter(
        text(params, "q"),
        None if state is None else ScheduleState(state),
        boolean(params, "enabled"),
        boolean(params, "failing"),
        health_choice(params),
    )


@dataclass(frozen=True)
class RunFilter:
    schedule: str | None = None
    statuses: tuple[RunStatus, ...] = ()
    node: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 100

    def admin_kwargs(self) -> dict[str, object]:
        return {
            "schedule": self.schedule,
            "status": list(self.statuses) or None,
            "node": self.node,
            "since": self.since,
            "until": self.until,
            "limit": self.limit,
        }


def run_filter(params: Mapping[str, str], default_limit: int = 100) -> RunFilter:
    """``schedule``, ``status``, ``node``, ``since``, ``until`` (ISO times) and ``limit``."""
    since, until = instant(params, "since"), instant(params, "until")
    if since is not None and until is not None and since >= until:
        raise BadQuery("since: must be before until")
    return RunFilter(
        schedule=text(params, "schedule"),
        statuses=tuple(statuses(params)),
        node=text(params, "node"),
        since=since,
        until=until,
        limit=integer(params, "limit", default_limit, 1, MAX_LIMIT),
    )
