"""The numbers of a hand-off run (``tickwork bench --workload handoff``), from what was recorded:
tickwork's history, the workers' execution lines (:mod:`tickwork_bench.handoffjobs`) and Celery
beat's send lines (:mod:`tickwork_bench.beatapp`). Pure functions: no process, no database."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .metrics import percentile

#: One minute: what beat must send within for a minute's fires to be on time.
MINUTE_S = 60.0
#: History statuses of a fire whose message the broker confirmed (the worker may have reported on).
HANDED_OFF = ("submitted", "started", "succeeded")


def _lags_ms(times: Iterable[float], t0: float) -> dict[str, float | None]:
    lags = [(t - t0) * 1000.0 for t in times]
    return {
        "p50_ms": percentile(lags, 50),
        "p99_ms": percentile(lags, 99),
        "max_ms": max(lags) if lags else None,
    }


def _rate(count: int, seconds: float | None) -> float | None:
    return count / seconds if seconds else None


def repeats(keys: Iterable[Any]) -> int:
    """How many of ``keys`` repeat one seen before (0 when all are distinct)."""
    return sum(n - 1 for n in Counter(keys).values() if n > 1)


def tickwork_metrics(
    *,
    schedules: int,
    t0: float,
    handed_off_at: float | None,
    executions: Sequence[Mapping[str, Any]],
    statuses: Mapping[str, int],
    history_duplicates: int,
) -> dict[str, Any]:
    """tickwork's part: ``schedules`` fires due at ``t0`` (epoch seconds).

    :param handed_off_at: the database time at which the last fire was first seen handed off in
        the history (``submitted`` or further), once every fire was decided; ``None`` if that
        never happened
    :param executions: the workers' lines of tickwork's tasks (``kind == "tickwork"``)
    :param statuses: the history rows of those fires by status, at the end

    A fire the nodes could not start within its schedule's misfire grace (30 s by default) is
    ``skipped``, as the misfire policy says: never handed off, counted in ``skipped``.
    """
    fires = [(e["schedule"], e["scheduled_for"]) for e in executions]
    ran = len(set(fires))
    ran_s = max(e["at"] for e in executions) - t0 if executions else None
    handed_off_s = handed_off_at - t0 if handed_off_at is not None else None
    handed_off = sum(statuses.get(status, 0) for status in HANDED_OFF)
    duplicates = max(repeats(fires), repeats(e["task_id"] for e in executions)) + history_duplicates
    return {
        "schedules": schedules,
        "handed_off": handed_off,
        "skipped": statuses.get("skipped", 0),
        "not_handed_off": schedules - handed_off,
        "handed_off_s": handed_off_s,
        "handed_off_per_s": _rate(handed_off, handed_off_s),
        "ran": ran,
        "executions": len(executions),
        "ran_s": ran_s,
        "ran_per_s": _rate(ran, ran_s) if ran == handed_off else None,
        "task_lag": _lags_ms((e["at"] for e in executions), t0),
        "duplicates": duplicates,
        "history": dict(sorted(statuses.items())),
    }


def beat_metrics(
    *,
    schedules: int,
    beats: int,
    t0: float,
    sends: Sequence[Mapping[str, Any]],
    executions: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Celery beat's part: ``beats`` beat processes, each with the same ``schedules`` entries due at
    the minute ``t0`` (epoch seconds).

    Only what a beat sent within the minute ``[t0, t0 + 60)`` counts for that minute (the rest of
    its fires were never sent: a crontab entry that is late skips to its next minute). A
    duplicate is a second execution of one entry for that minute: what two beats produce.
    """
    in_minute = [s for s in sends if t0 <= s["sent"] < t0 + MINUTE_S]
    sent_ids = {s["task_id"] for s in in_minute}
    ran = [e for e in executions if e["task_id"] in sent_ids]
    per_entry = Counter(e["entry"] for e in ran)
    by_beat: dict[str, Any] = {}
    for beat in sorted({s["beat"] for s in sends}):
        mine = [s["sent"] for s in in_minute if s["beat"] == beat]
        last = max(mine) - t0 if mine else None
        by_beat[beat] = {
            "sent_in_minute": len(mine),
            "sent_share": len(mine) / schedules if schedules else None,
            "last_sent_s": last,
            "sent_per_s": _rate(len(mine), last),
            "send_lag": _lags_ms(mine, t0),
        }
    return {
        "beats": beats,
        "schedules": schedules,
        "sent_in_minute": len(in_minute),
        "sent_after_minute": sum(1 for s in sends if s["sent"] >= t0 + MINUTE_S),
        "entries_sent": len({s["entry"] for s in in_minute}),
        "entries_not_sent": schedules - len({s["entry"] for s in in_minute}),
        "send_lag": _lags_ms((s["sent"] for s in in_minute), t0),
        "executions": len(ran),
        "entries_run": len(per_entry),
        "entries_run_twice_or_more": sum(1 for n in per_entry.values() if n > 1),
        "duplicates": sum(n - 1 for n in per_entry.values() if n > 1),
        "by_beat": by_beat,
    }
