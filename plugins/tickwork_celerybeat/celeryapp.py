"""Reading ``app.conf.beat_schedule`` of a Celery app (``tickwork import celery-beat MOD:APP``)."""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import Any

from tickwork.errors import ConfigError

from .crontabs import CrontabFields, translate
from .durations import interval_expression
from .entries import Imported, Refusals, json_value

#: The keys of a beat_schedule entry that tickwork carries over.
ENTRY_KEYS = frozenset({"task", "schedule", "args", "kwargs", "options", "relative"})


def load_app(reference: str) -> Any:
    """The Celery app named ``module:attribute`` (or ``module``, whose ``app`` or ``celery``
    attribute is taken, as ``celery -A`` does).

    :raises tickwork.errors.ConfigError: naming what could not be imported or found
    """
    module_name, _, attribute = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import the Celery app's module {module_name!r}: {exc}") from exc
    except Exception as exc:  # the module's own code failed: one line naming it, not a traceback
        message = " ".join(str(exc).split())
        raise ConfigError(
            f"importing the Celery app's module {module_name!r} failed: {type(exc).__name__}: {message}"
        ) from exc
    names = [attribute] if attribute else ["app", "celery"]
    for name in names:
        app = getattr(module, name, None)
        if app is not None:
            break
    else:
        raise ConfigError(f"module {module_name!r} has no attribute {' or '.join(map(repr, names))} (give MODULE:APP)")
    if not hasattr(app, "conf"):
        raise ConfigError(f"{reference!r} is not a Celery app (it has no .conf)")
    return app


def zone_of(app: Any) -> str:
    """The IANA zone Celery evaluates the app's crontabs in.

    :raises tickwork.errors.ConfigError: if the app has no zone and ``enable_utc`` is off (Celery
        then uses the host's local time, which a cluster of nodes cannot share)
    """
    zone = app.conf.timezone
    if zone is None:
        if app.conf.enable_utc:
            return "UTC"
        raise ConfigError(
            "the Celery app sets neither timezone nor enable_utc, so beat uses the local time of its host; "
            "set app.conf.timezone (an IANA name) so that every tickwork node computes the same times"
        )
    if isinstance(zone, str):
        return zone
    key = getattr(zone, "key", None) or getattr(zone, "zone", None)
    if not isinstance(key, str):
        raise ConfigError(f"the Celery app's timezone {zone!r} has no IANA name")
    return key


def read_app(app: Any, refusals: Refusals) -> list[Imported]:
    """One :class:`Imported` per ``beat_schedule`` entry; entries tickwork cannot reproduce go
    to ``refusals``."""
    from celery.schedules import crontab, schedule, solar

    zone = zone_of(app)
    out: list[Imported] = []
    for name, entry in dict(app.conf.beat_schedule or {}).items():
        if not isinstance(entry, dict) or "task" not in entry or "schedule" not in entry:
            refusals.add(name, "an entry needs at least 'task' and 'schedule'")
            continue
        unknown = sorted(set(entry) - ENTRY_KEYS)
        if unknown:
            refusals.add(name, f"unknown key(s) {', '.join(unknown)}")
            continue
        when = entry["schedule"]
        try:
            if entry.get("relative") or (isinstance(when, schedule) and when.relative):
                raise ValueError(
                    "relative=True (rounded to the period's resolution) has no tickwork equivalent; "
                    "use a crontab for times of day"
                )
            if isinstance(when, solar):
                raise ValueError(
                    f"solar schedules ({when.event} at {when.lat}, {when.lon}) have no tickwork trigger; "
                    "leave the entry out with --skip and keep it elsewhere"
                )
            if isinstance(when, crontab):
                kind, expression = translate(CrontabFields.of(when))
            elif isinstance(when, schedule | timedelta | int | float) and not isinstance(when, bool):
                period = when.run_every if isinstance(when, schedule) else when
                seconds = period.total_seconds() if isinstance(period, timedelta) else float(period)
                kind, expression = "interval", interval_expression(seconds)
            else:
                raise ValueError(f"schedule of type {type(when).__name__} has no tickwork trigger")
            out.append(
                Imported(
                    name=str(name),
                    kind=kind,
                    expression=expression,
                    tz=zone,
                    task=str(entry["task"]),
                    args=json_value(list(entry.get("args") or ())),
                    kwargs=json_value(dict(entry.get("kwargs") or {})),
                    options=json_value(dict(entry.get("options") or {})),
                )
            )
        except (ValueError, TypeError) as exc:
            refusals.add(name, str(exc))
    return out
